/* Recent configurations in the data buffer, keyed by the whole launch record (header plus
 * the queues it uses), so an identical relaunch skips validation and Algorithms 1-3.
 * CACHE_ENTRIES live entries plus one scratch entry that every cold launch is copied
 * into; committing swaps it with the oldest live entry, so nothing is copied twice.
 * The GST cannot change after boot, so it is not part of the key. */
#include "quco.h"

static entry_t store[QUCO_CACHE_ENTRIES + 1];
static uint8_t live[QUCO_CACHE_ENTRIES]; /* indices into store */
/* the key length in words of each live entry (0: empty), beside `live` rather than in the
 * entry: a miss then reads one byte per entry, not an index, a product and a word */
static uint8_t live_words[QUCO_CACHE_ENTRIES];
static uint8_t spare, victim;

void cache_init(void)
{
    for (uint32_t i = 0; i < QUCO_CACHE_ENTRIES; i++)
        live[i] = (uint8_t)i;
    spare = QUCO_CACHE_ENTRIES;
}

uint32_t key_words(uint32_t n) { return (sizeof(quco_launch_header_t) + n * sizeof(quco_queue_t)) / 4u; }

entry_t *cache_find(uint32_t n)
{
    uint32_t words = key_words(n); /* always even: 8 + 2n */
    for (uint32_t slot = 0; slot < QUCO_CACHE_ENTRIES; slot++) { /* ring order: commit replaces the oldest */
        if (live_words[slot] != words)
            continue;
        entry_t *entry = &store[live[slot]];
        const uint32_t *cached = (const uint32_t *)&entry->rec, *end = cached + words;
        const volatile uint32_t *incoming = RECORD_IN;
        do { /* two words a step: fewer taken branches on the hot path */
            uint32_t c0 = cached[0], c1 = cached[1], i0 = incoming[0], i1 = incoming[1];
            if ((c0 ^ i0) | (c1 ^ i1))
                break;
            cached += 2;
            incoming += 2;
        } while (cached != end);
        if (cached == end)
            return entry;
    }
    return 0;
}

entry_t *cache_scratch(void) { return &store[spare]; } /* not searched until committed */

void cache_commit(void)
{
    live_words[victim] = (uint8_t)key_words(store[spare].rec.h.num_queues);
    uint8_t old = live[victim];
    live[victim] = spare;
    spare = old;
    victim = (uint8_t)((victim + 1u) % QUCO_CACHE_ENTRIES);
}
