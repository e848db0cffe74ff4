/* Unicorn hooks in C for the Soc's counting modes (emulator/fastcount.py loads this with
 * ctypes; it is plain C, no Python API).
 *
 * A Python hook costs a ctypes round trip per call, and a launch runs about 180 blocks and
 * 320 loads and stores: the hooks, not the emulation, set the pace. So these two count in C.
 * The block hook walks the Soc's graph of edges (emulator/hooks.py): the block that runs
 * next, seen from the edge that reached the current block, is looked up in a hash table of
 * (edge, block) -> next edge, whose cycles and instructions are added to the step's sums; a
 * pair not in the table is asked of Python (on_edge), which checks a block never seen before
 * it runs (RV32IMF, up to wfi), schedules the pair with the timing model and enters it. The
 * access hook counts the loads and stores that CV32E40P splits in two bus transactions (a
 * word not on a word boundary, a halfword at 3 mod 4).
 *
 * Python owns every array below and may replace them (to grow) inside on_edge: the hook
 * reads them through the struct again after the call.
 */
#include <stdint.h>

typedef uint32_t (*quco_new_edge_fn)(uint32_t edge, uint64_t address, uint32_t size);
typedef int (*quco_stop_fn)(void *uc);  /* uc_emu_stop */

typedef struct {
    quco_new_edge_fn on_edge;   /* Python: the edge from `edge` to block (address, size), entered */
    uint32_t *edge_cycles;      /* per edge: cycles of its block after its previous block */
    uint32_t *edge_insns;       /* per edge: instructions its block retires */
    uint32_t *slot_edge;        /* hash table, open addressing: from edge (UINT32_MAX: empty) */
    uint64_t *slot_block;       /* ... to block address << 32 | translated size */
    uint32_t *slot_next;        /* ... is this edge */
    uint32_t mask;              /* slots - 1, a power of two less one */
    uint32_t edge;              /* the edge of the block running now (0: none yet this step) */
    uint64_t cycles, insns;     /* this step's sums */
    uint32_t blocks, splits;    /* this step's blocks, and its split loads and stores */
    uint64_t budget;            /* instructions the step may retire (UINT64_MAX: no limit) */
    quco_stop_fn stop;          /* uc_emu_stop, called before a block that could pass the budget */
    uint32_t over;              /* set when it was called */
} quco_counter;

/* Layout version: bump it with any change to quco_counter (fastcount.py checks it). */
#define QUCO_FASTCOUNT_VERSION 3u

unsigned quco_fastcount_abi(void)
{
    return (unsigned)sizeof(quco_counter) << 8 | QUCO_FASTCOUNT_VERSION;
}

/* The table's hash; fastcount.slot_of() computes the same. */
static uint32_t slot_of(uint32_t edge, uint64_t block, uint32_t mask)
{
    return (uint32_t)((block * 0x9E3779B97F4A7C15ull ^ (uint64_t)edge * 0xC2B2AE3D27D4EB4Full) >> 32) & mask;
}

void quco_on_block(void *uc, uint64_t address, uint32_t size, void *user)
{
    quco_counter *c = (quco_counter *)user;
    uint64_t block = address << 32 | size;
    uint32_t s = slot_of(c->edge, block, c->mask), next;
    /* The budget, without Unicorn's instruction limit (a callback per instruction, a third of
     * a counted launch): a block that could pass it does not start (stopped in its block hook,
     * a block does not run); Python then runs what is left under the exact limit. size / 4
     * bounds the block's instructions (a wfi may end it earlier: then the exact run decides). */
    if (c->insns + (size >> 2) > c->budget) {
        c->over = 1;
        c->stop(uc);
        return;
    }
    for (;;) {
        if (c->slot_edge[s] == UINT32_MAX) {  /* not in the table: Python makes and enters it */
            next = c->on_edge(c->edge, address, size);
            break;
        }
        if (c->slot_edge[s] == c->edge && c->slot_block[s] == block) {
            next = c->slot_next[s];
            break;
        }
        s = (s + 1) & c->mask;
    }
    c->edge = next;
    c->cycles += c->edge_cycles[next];
    c->insns += c->edge_insns[next];
    c->blocks++;
}

void quco_on_access(void *uc, int type, uint64_t address, int size, int64_t value, void *user)
{
    quco_counter *c = (quco_counter *)user;
    (void)uc, (void)type, (void)value;
    if ((size == 4 && (address & 3)) || (size == 2 && (address & 3) == 3))
        c->splits++;
}
