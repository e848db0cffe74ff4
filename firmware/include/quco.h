/* QuCo firmware internals shared between the source files. */
#ifndef QUCO_H
#define QUCO_H
#include <stdint.h>
#include "quco_abi.h"

#define GST ((const volatile quco_gst_t *)QUCO_GST_BASE)
#define MAILBOX ((volatile quco_mailbox_t *)QUCO_MAILBOX_BASE)
#define RECORD_IN ((const volatile uint32_t *)(QUCO_MAILBOX_BASE + QUCO_MAILBOX_RECORD))
#define LDS_WORDS ((volatile uint32_t *)QUCO_LDS_BASE)

/* The launch record, copied out of the mailbox before it is validated. */
typedef struct {
    quco_launch_header_t h;
    quco_queue_t q[QUCO_MAX_QUEUES];
} launch_t;

/* A configuration: what the planner decides and the cache keeps. */
typedef struct {
    uint32_t tile;
    uint8_t slots[QUCO_MAX_QUEUES];
} config_t;

/* gst.c: boot-time GST validation; returns a status, sets *detail. */
uint32_t gst_check(uint32_t *detail);

/* launch.c: record validation and the algorithm (Algorithms 1-3). */
uint32_t launch_check(const launch_t *l, uint32_t *detail);
uint32_t plan(const launch_t *l, config_t *out, uint32_t *detail);
uint32_t meta_bytes(uint32_t num_queues);
uint32_t align_up(uint32_t n);

/* layout.c: writes the header and descriptors at the LDS base, header last. */
void layout_write(const launch_t *l, const config_t *c, uint32_t generation);

/* cache.c: recently computed configurations keyed by the full launch record. */
int cache_lookup(const launch_t *l, config_t *out);
void cache_insert(const launch_t *l, const config_t *c);
#endif
