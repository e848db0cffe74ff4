/* QuCo firmware: check the GST once, then serve launches forever.
 * Between launches the core sleeps in wfi; the host rings the mailbox doorbell. */
#include "quco.h"

static uint32_t boot_status, boot_detail, generation;
/* The entry last written to the LDS. While it is live the LDS holds its configuration: a
 * live entry never changes, and the scratch entry (the only one written) becomes live only
 * through a cold launch, which writes the LDS. */
static const entry_t *in_lds;

/* Validates and plans the mailbox record into the cache's scratch entry; on success the
 * entry holds the record and its configuration (and, with use_cache, becomes live). */
static uint32_t cold_launch(entry_t *entry, uint32_t *detail, uint32_t use_cache)
{
    groups_t groups; /* the record's queues, grouped: launch_check fills them, plan reads them */
    uint32_t status = launch_check(RECORD_IN, &entry->rec, &groups, detail);
    if (status == QUCO_STATUS_OK)
        status = plan(&entry->rec, &groups, &entry->config, detail);
    if (status == QUCO_STATUS_OK && use_cache)
        cache_commit();
    return status;
}

/* The mailbox answer, status last: the host polls it. */
static void answer(uint32_t status, uint32_t detail, uint32_t hit)
{
    volatile quco_mailbox_t *mb = MAILBOX;
    mb->detail = detail;
    mb->cache_hit = hit;
    mb->generation = generation;
    mb->status = status;
}

/* One launch: a cached configuration or a cold one; the LDS, then the mailbox. */
static void serve_launch(void)
{
    uint32_t status, detail = 0, hit = 0;
    if (boot_status != QUCO_STATUS_OK) { /* a refused GST answers every launch */
        status = boot_status;
        detail = boot_detail;
    } else {
        uint32_t flags = RECORD_IN[__builtin_offsetof(quco_launch_header_t, flags) / 4u];
        uint32_t n = RECORD_IN[__builtin_offsetof(quco_launch_header_t, num_queues) / 4u];
        uint32_t use_cache = !(flags & QUCO_FLAG_NO_CACHE);
        /* n - 1u < MAX_QUEUES: 1..MAX_QUEUES in one comparison (0 wraps around) */
        entry_t *entry = (use_cache && n - 1u < QUCO_MAX_QUEUES) ? cache_find(n) : 0;
        if (entry && entry == in_lds) {
            /* the relaunch of the configuration the LDS holds: only the generation changes.
             * It answers on its own: through the shared answer below, GCC keeps status and
             * hit in stack slots across the inlined cold path (9 cycles more per relaunch). */
            ((volatile quco_lds_header_t *)QUCO_LDS_BASE)->generation = ++generation;
            answer(QUCO_STATUS_OK, 0, 1);
            return;
        }
        if (entry) {
            hit = 1;
            status = QUCO_STATUS_OK;
        } else {
            entry = cache_scratch();
            status = cold_launch(entry, &detail, use_cache);
        }
        if (status == QUCO_STATUS_OK) { /* one call site: inlined, so it borrows main's saved registers */
            layout_write(&entry->rec, &entry->config, ++generation);
            in_lds = entry;
        }
    }
    answer(status, detail, hit);
}

int main(void)
{
    volatile quco_mailbox_t *mb = MAILBOX;
    boot_status = gst_check(&boot_detail);
    if (boot_status == QUCO_STATUS_OK)
        gst_derive();
    cache_init();
    mb->boot_status = boot_status;
    mb->detail = boot_detail;
    for (;;) {
        __asm__ volatile("wfi");
        if (mb->doorbell) {
            mb->doorbell = 0; /* the acknowledgement: the launch is taken */
            serve_launch();
        }
    }
}
