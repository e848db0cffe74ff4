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
typedef void (*quco_timed_fn)(uint64_t address);  /* Python: an operand-timed instruction, the slow way */
typedef int (*quco_reg_read_fn)(void *uc, int regid, void *value);  /* uc_reg_read */

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
    /* The operand-timed instructions (divides, fdiv/fsqrt: emulator/hooks.py): a memo of what
     * the first one of a block execution did, by (edge, site, operands), filled by Python */
    quco_timed_fn on_timed;     /* Python: one the memo does not answer */
    quco_reg_read_fn reg_read;  /* uc_reg_read */
    uint32_t sites;             /* how many */
    uint64_t *site_address;     /* per site: its address */
    int32_t *site_reg;          /* ... the Unicorn registers its latency reads, two a site (-1: none) */
    uint32_t timed_block;       /* `blocks` when one last ran (UINT32_MAX: none this step) */
    uint32_t timed_lat;         /* the latency of the one the memo answered there */
    uint32_t memo_mask;         /* memo slots - 1 */
    uint32_t *memo_edge;        /* key: the edge the walk was on (UINT32_MAX: empty) */
    uint32_t *memo_site;        /* ... the site */
    uint64_t *memo_ops;         /* ... its operands' low 32 bits, first << 32 | second */
    uint32_t *memo_next;        /* answer: the edge the walk goes on from */
    int64_t *memo_delta;        /* ... cycles added (a variant may cost fewer) */
    uint32_t *memo_lat;         /* ... the instruction's latency */
} quco_counter;

/* Layout version: bump it with any change to quco_counter (fastcount.py checks it). */
#define QUCO_FASTCOUNT_VERSION 4u

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

/* The memo's hash; fastcount.memo_slot() computes the same. */
static uint32_t memo_slot(uint32_t edge, uint32_t site, uint64_t ops, uint32_t mask)
{
    return (uint32_t)(((ops * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)edge * 0xC2B2AE3D27D4EB4Full)
                       ^ ((uint64_t)site * 0x165667B19E3779F9ull)) >> 32) & mask;
}

/* A code hook on each operand-timed instruction: the first of a block execution whose (edge,
 * operands) the memo knows moves the walk as Python did the first time; anything else is
 * Python's (Hooks._on_operand_timed_c). */
void quco_on_timed(void *uc, uint64_t address, uint32_t size, void *user)
{
    quco_counter *c = (quco_counter *)user;
    uint64_t a = 0, b = 0, ops;
    uint32_t i, s;
    (void)size;
    if (c->timed_block == c->blocks) {  /* not the first of this block execution */
        c->on_timed(address);
        return;
    }
    for (i = 0; i < c->sites && c->site_address[i] != address; i++)
        ;
    if (i == c->sites) {
        c->on_timed(address);
        return;
    }
    if (c->site_reg[2 * i] >= 0)
        c->reg_read(uc, c->site_reg[2 * i], &a);
    if (c->site_reg[2 * i + 1] >= 0)
        c->reg_read(uc, c->site_reg[2 * i + 1], &b);
    ops = (a & 0xFFFFFFFFull) << 32 | (b & 0xFFFFFFFFull);
    for (s = memo_slot(c->edge, i, ops, c->memo_mask); c->memo_edge[s] != UINT32_MAX; s = (s + 1) & c->memo_mask) {
        if (c->memo_edge[s] == c->edge && c->memo_site[s] == i && c->memo_ops[s] == ops) {
            c->timed_block = c->blocks;
            c->timed_lat = c->memo_lat[s];
            c->cycles += (uint64_t)c->memo_delta[s];
            c->edge = c->memo_next[s];
            return;
        }
    }
    c->on_timed(address);
}
