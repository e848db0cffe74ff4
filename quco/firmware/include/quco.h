/* QuCo firmware internals shared between the source files. */
#ifndef QUCO_H
#define QUCO_H
#include <stdint.h>
#include "quco_abi.h"

#define GST ((const quco_gst_t *)QUCO_GST_BASE) /* read-only and fixed after reset */
#define MAILBOX ((volatile quco_mailbox_t *)QUCO_MAILBOX_BASE)
#define RECORD_IN ((const volatile uint32_t *)(QUCO_MAILBOX_BASE + QUCO_MAILBOX_RECORD))
#define LDS_WORDS ((volatile uint32_t *)QUCO_LDS_BASE)

/* The launch record, copied out of the mailbox before it is validated. */
typedef struct {
    quco_launch_header_t h;
    quco_queue_t q[QUCO_MAX_QUEUES];
} launch_t;

/* A configuration: what the planner decides and the cache keeps. Queues are in runs of
 * identical consecutive queues ("groups", see below): run i has count[i] queues with
 * slots[i] slots each. */
typedef struct {
    uint32_t tile;     /* elements */
    uint32_t n_groups;
    uint8_t count[QUCO_MAX_QUEUES];
    uint8_t slots[QUCO_MAX_QUEUES];
} config_t;

/* gst.c: boot-time GST validation; returns a status, sets *detail. */
uint32_t gst_check(uint32_t *detail);

/* Identical consecutive queues (same length, type and element size; a kernel.json
 * "count") get identical slots, so validation and planning work on groups of them: the
 * 8+1 queues of a matrix kernel are two groups. Sums over queues become count x term. */
typedef struct {
    uint8_t count;      /* queues in the group */
    uint8_t stationary; /* 1: QUCO_QUEUE_STATIONARY, 0: streaming */
    uint8_t elem_size;  /* bytes: 1, 2, 4 or 8 */
    uint8_t elem_log2;  /* log2(elem_size) */
    uint32_t length;    /* elements: streamed in ceil(length / 2^k) transfers of 2^k */
} group_t;
typedef struct {
    uint32_t n_groups;
    uint32_t n_stationary;   /* stationary queues (not groups) */
    uint32_t n_streaming;    /* streaming queues */
    uint32_t tile_elem_size; /* the element size the tile is chosen for */
    uint32_t min_len;        /* the shortest queue: the length bound (two transfers) */
    uint32_t step_bytes;     /* bytes of one element of every streaming queue (Little's law) */
    group_t g[QUCO_MAX_QUEUES];
} groups_t;

static inline uint32_t min_u(uint32_t a, uint32_t b) { return a < b ? a : b; }
/* log2 of an element size of 1, 2, 4 or 8, without a loop: 0, 1, 2, 3 */
static inline uint32_t log2_elem(uint32_t elem_size) { return (elem_size >> 1) - (elem_size >> 3); }
static inline uint32_t align_up(uint32_t n) { return (n + QUCO_LDS_ALIGN - 1u) & ~(QUCO_LDS_ALIGN - 1u); }

/* check.c: validates the launch record and groups identical consecutive queues. */
uint32_t launch_check(const volatile uint32_t *src, launch_t *l, groups_t *groups, uint32_t *detail);

/* algorithm.c: the algorithm (Algorithms 1-3). */
void gst_derive(void); /* boot: values of a valid GST the planner reuses */
uint32_t plan(const launch_t *l, const groups_t *groups, config_t *out, uint32_t *detail);

/* layout.c: writes the header and descriptors at the LDS base, header last. */
uint32_t meta_bytes(uint32_t num_queues); /* LDS bytes of the header and descriptors, aligned */
void layout_write(const launch_t *l, const config_t *c, uint32_t generation);

/* cache.c: recent configurations keyed by the whole launch record. A cold launch is
 * copied into a scratch entry; committing it makes it live and evicts the oldest. */
typedef struct {
    launch_t rec;
    config_t config;
} entry_t;
void cache_init(void);
entry_t *cache_find(uint32_t num_queues); /* compares against the mailbox record */
entry_t *cache_scratch(void);
void cache_commit(void);                  /* scratch becomes a live entry */
uint32_t key_words(uint32_t num_queues);
#endif
