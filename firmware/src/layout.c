/* Write the configuration at the LDS base: descriptors first, the header last, and the
 * header's generation word very last, so a reader that sees the new generation sees a
 * complete configuration. Only called after planning succeeded: failures touch nothing. */
#include "quco.h"

static volatile uint32_t *lds_word(uint32_t offset) { return LDS_WORDS + offset / 4u; }

void layout_write(const launch_t *l, const config_t *c, uint32_t generation)
{
    uint32_t n = l->h.num_queues, t = c->tile, meta = meta_bytes(n);
    uint32_t offset = meta, barrier = 0;
    uint32_t qd = sizeof(quco_lds_header_t);
    uint32_t ad = qd + n * sizeof(quco_queue_desc_t);
    for (uint32_t i = 0; i < n; i++) {
        const quco_queue_t *q = &l->q[i];
        uint32_t s = c->slots[i], e = q->elem_size, slot_bytes = t * e;
        uint32_t count = QUCO_BARRIERS_PER_SLOT * s;
        volatile uint32_t *d = lds_word(qd + i * sizeof(quco_queue_desc_t));
        d[0] = offset;
        d[1] = slot_bytes;
        d[2] = s | (uint32_t)q->type << 16 | e << 24;
        d[3] = barrier | count << 16;
        volatile uint32_t *a = lds_word(ad + i * sizeof(quco_att_desc_t));
        a[0] = offset;
        a[1] = t;
        a[2] = slot_bytes;
        a[3] = s | e << 16;
        a[4] = q->length;
        a[5] = barrier | i << 16;
        a[6] = 0;
        a[7] = 0;
        offset += align_up(s * slot_bytes);
        barrier += count;
    }
    for (uint32_t w = ad + n * sizeof(quco_att_desc_t); w < meta; w += 4u)
        *lds_word(w) = 0;
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
