/* QuCo firmware: check the GST once, then serve launches forever.
 * Between launches the core sleeps in wfi; the host rings the mailbox doorbell. */
#include "quco.h"

static uint32_t boot_status, boot_detail, generation;
static launch_t launch;

static void copy_record(void)
{
    uint32_t *dst = (uint32_t *)&launch;
    for (uint32_t i = 0; i < sizeof(launch_t) / 4u; i++)
        dst[i] = RECORD_IN[i];
}

static void serve_launch(void)
{
    volatile quco_mailbox_t *mb = MAILBOX;
    uint32_t status = boot_status, detail = boot_detail, hit = 0;
    config_t config;
    if (status == QUCO_STATUS_OK) {
        copy_record();
        status = launch_check(&launch, &detail);
    }
    if (status == QUCO_STATUS_OK) {
        int use_cache = !(launch.h.flags & QUCO_FLAG_NO_CACHE);
        hit = use_cache && cache_lookup(&launch, &config);
        if (!hit) {
            status = plan(&launch, &config, &detail);
            if (status == QUCO_STATUS_OK && use_cache)
                cache_insert(&launch, &config);
        }
    }
    if (status == QUCO_STATUS_OK)
        layout_write(&launch, &config, ++generation);
    mb->detail = detail;
    mb->cache_hit = hit;
    mb->generation = generation;
    mb->status = status; /* last: the host polls it */
}

int main(void)
{
    volatile quco_mailbox_t *mb = MAILBOX;
    boot_status = gst_check(&boot_detail);
    mb->boot_status = boot_status;
    mb->detail = boot_detail;
    for (;;) {
        __asm__ volatile("wfi");
        if (mb->doorbell) {
            mb->doorbell = 0;
            serve_launch();
        }
    }
}
