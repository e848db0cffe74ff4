/* Write the configuration at the LDS base: descriptors first, the header last, and the
 * header's generation word very last, so a reader that sees the new generation sees a
 * complete configuration. Only called after planning succeeded: failures touch nothing. */
#include "quco.h"

#define QD_WORDS (sizeof(quco_queue_desc_t) / 4u)
#define AD_WORDS (sizeof(quco_att_desc_t) / 4u)

void layout_write(const launch_t *l, const config_t *c, uint32_t generation)
{
    uint32_t n = l->h.num_queues, t = c->tile, meta = meta_bytes(n);
    volatile uint32_t *d = LDS_WORDS + sizeof(quco_lds_header_t) / 4u; /* queue descriptors */
    volatile uint32_t *a = d + n * QD_WORDS;                            /* ATT descriptors */
    const quco_queue_t *q = l->q;
    uint32_t offset = meta, barrier = 0, index = 0;
    for (uint32_t r = 0; r < c->ng; r++) { /* a run of identical queues: same words */
        uint32_t s = c->slots[r], e = q->elem_size, slot_bytes = t * e, length = q->length;
        uint32_t d2 = s | (uint32_t)q->type << 16 | e << 24, a3 = s | e << 16;
        uint32_t block = align_up(s * slot_bytes), count = QUCO_BARRIERS_PER_SLOT * s;
        uint32_t d3 = barrier | count << 16, a5 = barrier | index << 16;
        uint32_t d3_step = count, a5_step = count + (1u << 16);
        uint32_t k = c->count[r];
        do { /* count >= 1: one branch per queue */
            d[0] = offset;
            d[1] = slot_bytes;
            d[2] = d2;
            d[3] = d3;
            a[0] = offset;
            a[1] = t;
            a[2] = slot_bytes;
            a[3] = a3;
            a[4] = length;
            a[5] = a5;
            offset += block;
            d3 += d3_step;
            a5 += a5_step;
            d += QD_WORDS;
            a += AD_WORDS;
        } while (--k);
        barrier = d3 & 0xffffu;
        index += c->count[r];
        q += c->count[r];
    }
    /* the gap up to meta is not part of the configuration: left as it is */
    volatile quco_lds_header_t *hd = (volatile quco_lds_header_t *)QUCO_LDS_BASE;
    hd->magic = QUCO_LDS_MAGIC;
    hd->num_queues = n;
    hd->tile_elems = t;
    hd->meta_bytes = meta;
    hd->used_bytes = offset;
    hd->barriers_used = barrier;
    hd->compute_intensity = l->h.compute_intensity;
    hd->generation = generation;
}
