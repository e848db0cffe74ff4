/* The firmware's C (quco/firmware/src/*.c, unchanged) on the host, for branch coverage (gcov):
 * bench/fuzz.py builds it with --coverage and feeds it the GSTs and launch records its campaign
 * ran on the emulator, then holds its answers to the emulator's, byte for byte.
 *
 * The firmware reads and writes fixed addresses (GST, mailbox, LDS): they are mapped here at
 * those addresses. Its `wfi` is assembled as `int3` (bench/fuzz_host.h), so every sleep lands in
 * on_wfi, which plays the host's side of the mailbox: it writes out the answer to the previous
 * launch, rings the doorbell for the next record, and exits (gcov writes its counts) after the
 * last. The first sleep after boot is answered with a wake-up and no doorbell (a spurious
 * wake-up, which RISC-V allows wfi), so the loop's no-doorbell branch runs too.
 *
 * Input on stdin, repeated: u32 n, the 256-byte GST, n launch records of QUCO_LAUNCH_SIZE bytes.
 * Output on stdout per GST: u32 boot_status, u32 detail; per launch: u32 status, detail,
 * generation, cache_hit, u32 k, then k bytes of the LDS (the configuration, k = 0 on failure).
 * Each GST runs in a child process of its own: a fresh unit, its statics zeroed as at reset. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "quco_abi.h"

int quco_firmware_main(void); /* main.c's main, renamed by the build */

static const uint8_t *records;
static uint32_t n_records, next, wakes;

static void put(const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t k = write(1, b, n);
        if (k <= 0)
            _exit(3);
        b += k;
        n -= (size_t)k;
    }
}

static void put_word(uint32_t v) { put(&v, 4); }

static volatile uint32_t *mailbox_word(uint32_t offset) { return (volatile uint32_t *)(uintptr_t)(QUCO_MAILBOX_BASE + offset); }

static void on_wfi(int sig)
{
    (void)sig;
    const quco_mailbox_t *mb = (const quco_mailbox_t *)(uintptr_t)QUCO_MAILBOX_BASE;
    if (wakes++ == 0) { /* after boot: its answer, then a spurious wake-up */
        put_word(mb->boot_status);
        put_word(mb->detail);
        return;
    }
    if (next > 0) { /* the answer to the launch just served */
        put_word(mb->status);
        put_word(mb->detail);
        put_word(mb->generation);
        put_word(mb->cache_hit);
        const quco_lds_header_t *h = (const quco_lds_header_t *)(uintptr_t)QUCO_LDS_BASE;
        uint32_t k = 0;
        if (mb->status == QUCO_STATUS_OK && h->num_queues <= QUCO_MAX_QUEUES)
            k = sizeof(quco_lds_header_t) + h->num_queues * (sizeof(quco_queue_desc_t) + sizeof(quco_att_desc_t));
        put_word(k);
        put((const void *)(uintptr_t)QUCO_LDS_BASE, k);
    }
    if (next == n_records)
        exit(0); /* gcov's counts are written at exit */
    memcpy((void *)(uintptr_t)(QUCO_MAILBOX_BASE + QUCO_MAILBOX_RECORD), records + (size_t)next * QUCO_LAUNCH_SIZE,
           QUCO_LAUNCH_SIZE);
    next++;
    *mailbox_word(0) = 1; /* the doorbell */
}

static void map_at(uintptr_t base, size_t size)
{
    void *p = mmap((void *)base, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != (void *)base) {
        perror("mmap");
        exit(2);
    }
}

static int read_all(void *p, size_t n)
{
    uint8_t *b = p;
    while (n) {
        ssize_t k = read(0, b, n);
        if (k <= 0)
            return 0;
        b += k;
        n -= (size_t)k;
    }
    return 1;
}

int main(void)
{
    static uint8_t gst[QUCO_GST_SIZE];
    uint32_t n;
    while (read_all(&n, 4)) {
        uint8_t *recs = malloc((size_t)n * QUCO_LAUNCH_SIZE + 1);
        if (!recs || !read_all(gst, sizeof gst) || !read_all(recs, (size_t)n * QUCO_LAUNCH_SIZE))
            return 2;
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            map_at(QUCO_GST_BASE, 4096);
            map_at(QUCO_MAILBOX_BASE, QUCO_MAILBOX_SIZE);
            map_at(QUCO_LDS_BASE, QUCO_LDS_SIZE);
            memcpy((void *)(uintptr_t)QUCO_GST_BASE, gst, sizeof gst);
            records = recs;
            n_records = n;
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_wfi;
            sa.sa_flags = SA_NODEFER;
            sigaction(SIGTRAP, &sa, 0);
            alarm(20); /* no launch takes a fraction of that: a hang ends the child */
            quco_firmware_main();
            _exit(4); /* main never returns */
        }
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "fuzz_host: the unit's child ended badly (status 0x%x)\n", status);
            return 1;
        }
        free(recs);
    }
    return 0;
}
