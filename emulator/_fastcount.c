/* Unicorn hooks in C for the Soc's counting modes (emulator/fastcount.py loads this with
 * ctypes; it is plain C, no Python API).
 *
 * A Python hook costs a ctypes round trip per call, and a launch runs about 180 blocks and
 * 320 loads and stores: the hooks, not the emulation, set the pace. These two only record:
 * the block hook appends each executed block (address, translated size) to the step's path,
 * and asks Python (on_new) to check a block it has not seen before it runs; the access hook
 * counts the loads and stores that CV32E40P splits in two bus transactions (a word not on a
 * word boundary, a halfword at 3 mod 4). Python then prices the path with the timing model,
 * exactly as its own per-block hook would have, one dictionary lookup per block.
 */
#include <stdint.h>

typedef void (*quco_new_block_fn)(uint64_t address, uint32_t size);

typedef struct {
    uint64_t code_base;        /* the known table covers code_base .. code_base + 4 * known_words */
    uint32_t known_words;
    uint16_t *known;           /* per word: the translated size of a block checked there, 0 if none */
    quco_new_block_fn on_new;  /* Python: check a block before it runs (RV32IMF, up to wfi) */
    uint64_t *path;            /* the step's executed blocks: address << 32 | translated size */
    uint32_t used, capacity;   /* entries of path in use; room for */
    uint32_t overflow;         /* blocks that found no room (the caller sizes path by the budget) */
    uint32_t splits;           /* split loads and stores this step */
} quco_counter;

/* Layout version: bump it with any change to quco_counter (fastcount.py checks it). */
#define QUCO_FASTCOUNT_VERSION 1u

unsigned quco_fastcount_abi(void)
{
    return (unsigned)sizeof(quco_counter) << 8 | QUCO_FASTCOUNT_VERSION;
}

void quco_on_block(void *uc, uint64_t address, uint32_t size, void *user)
{
    quco_counter *c = (quco_counter *)user;
    uint64_t offset = address - c->code_base;
    (void)uc;
    if (offset >= 4ull * c->known_words || (offset & 3) || c->known[offset >> 2] != size)
        c->on_new(address, size);
    if (c->used < c->capacity)
        c->path[c->used++] = (address << 32) | size;
    else
        c->overflow++;
}

void quco_on_access(void *uc, int type, uint64_t address, int size, int64_t value, void *user)
{
    quco_counter *c = (quco_counter *)user;
    (void)uc, (void)type, (void)value;
    if ((size == 4 && (address & 3)) || (size == 2 && (address & 3) == 3))
        c->splits++;
}
