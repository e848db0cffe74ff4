/* Write the configuration at the LDS base: descriptors first, the header last, and the
 * header's generation word very last, so a reader that sees the new generation sees a
 * complete configuration. Only called after planning succeeded: failures touch nothing. */
#include "quco.h"

uint32_t meta_bytes(uint32_t n)
{
    return align_up(sizeof(quco_lds_header_t) + n * (sizeof(quco_queue_desc_t) + sizeof(quco_att_desc_t)));
}

/* The descriptors are written a word at a time; these fields share a word (quco_abi.h
 * gives each field's word and shift, generated from gst/abi.py). */
_Static_assert(QUCO_QUEUE_DESC_SLOTS_WORD == QUCO_QUEUE_DESC_TYPE_WORD &&
               QUCO_QUEUE_DESC_SLOTS_WORD == QUCO_QUEUE_DESC_ELEM_SIZE_WORD, "slots, type, elem_size: one word");
_Static_assert(QUCO_QUEUE_DESC_BARRIER_BASE_WORD == QUCO_QUEUE_DESC_BARRIER_COUNT_WORD, "barriers: one word");
_Static_assert(QUCO_ATT_DESC_RING_SLOTS_WORD == QUCO_ATT_DESC_ELEM_SIZE_WORD, "ring_slots, elem_size: one word");
_Static_assert(QUCO_ATT_DESC_FULL_BARRIER_WORD == QUCO_ATT_DESC_QUEUE_INDEX_WORD, "barrier, queue: one word");

void layout_write(const launch_t *l, const config_t *c, uint32_t generation)
{
    uint32_t n = l->h.num_queues, tile = c->tile, meta = meta_bytes(n);
    volatile uint32_t *desc = LDS_WORDS + sizeof(quco_lds_header_t) / 4u; /* queue descriptors */
    volatile uint32_t *att = desc + n * QUCO_QUEUE_DESC_WORDS;             /* ATT descriptors */
    const quco_queue_t *q = l->q;
    uint32_t offset = meta, barrier = 0, index = 0;
    for (uint32_t r = 0; r < c->n_groups; r++) { /* a run of identical queues: same words */
        uint32_t slots = c->slots[r], elem_size = q->elem_size, slot_bytes = tile * elem_size;
        uint32_t length = q->length, block = align_up(slots * slot_bytes);
        uint32_t barriers = QUCO_BARRIERS_PER_SLOT * slots;
        uint32_t desc_slots_type_elem = slots << QUCO_QUEUE_DESC_SLOTS_SHIFT |
                                        (uint32_t)q->type << QUCO_QUEUE_DESC_TYPE_SHIFT |
                                        elem_size << QUCO_QUEUE_DESC_ELEM_SIZE_SHIFT;
        uint32_t att_slots_elem = slots << QUCO_ATT_DESC_RING_SLOTS_SHIFT | elem_size << QUCO_ATT_DESC_ELEM_SIZE_SHIFT;
        /* the two barrier words step by a constant from one queue of the run to the next:
         * the base by `barriers`, the ATT's queue index by one */
        uint32_t desc_barriers = barrier << QUCO_QUEUE_DESC_BARRIER_BASE_SHIFT |
                                 barriers << QUCO_QUEUE_DESC_BARRIER_COUNT_SHIFT;
        uint32_t att_barrier_queue = barrier << QUCO_ATT_DESC_FULL_BARRIER_SHIFT |
                                     index << QUCO_ATT_DESC_QUEUE_INDEX_SHIFT;
        uint32_t desc_barriers_step = barriers << QUCO_QUEUE_DESC_BARRIER_BASE_SHIFT;
        uint32_t att_barrier_queue_step = barriers << QUCO_ATT_DESC_FULL_BARRIER_SHIFT |
                                          1u << QUCO_ATT_DESC_QUEUE_INDEX_SHIFT;
        uint32_t left = c->count[r];
        do { /* count >= 1: one branch per queue */
            desc[QUCO_QUEUE_DESC_OFFSET_WORD] = offset;
            desc[QUCO_QUEUE_DESC_SLOT_BYTES_WORD] = slot_bytes;
            desc[QUCO_QUEUE_DESC_SLOTS_WORD] = desc_slots_type_elem;
            desc[QUCO_QUEUE_DESC_BARRIER_BASE_WORD] = desc_barriers;
            att[QUCO_ATT_DESC_LDS_ADDR_WORD] = offset;
            att[QUCO_ATT_DESC_BOX_ELEMS_WORD] = tile;
            att[QUCO_ATT_DESC_SLOT_STRIDE_WORD] = slot_bytes;
            att[QUCO_ATT_DESC_RING_SLOTS_WORD] = att_slots_elem;
            att[QUCO_ATT_DESC_GLOBAL_LENGTH_WORD] = length;
            att[QUCO_ATT_DESC_FULL_BARRIER_WORD] = att_barrier_queue;
            offset += block;
            desc_barriers += desc_barriers_step;
            att_barrier_queue += att_barrier_queue_step;
            desc += QUCO_QUEUE_DESC_WORDS;
            att += QUCO_ATT_DESC_WORDS;
        } while (--left);
        barrier = (desc_barriers >> QUCO_QUEUE_DESC_BARRIER_BASE_SHIFT) & QUCO_QUEUE_DESC_BARRIER_BASE_MASK;
        index += c->count[r];
        q += c->count[r];
    }
    /* the gap up to meta is not part of the configuration: left as it is */
    volatile quco_lds_header_t *hd = (volatile quco_lds_header_t *)QUCO_LDS_BASE;
    hd->magic = QUCO_LDS_MAGIC;
    hd->num_queues = n;
    hd->tile_elems = tile;
    hd->meta_bytes = meta;
    hd->used_bytes = offset;
    hd->barriers_used = barrier;
    hd->compute_intensity = l->h.compute_intensity;
    hd->generation = generation; /* last: the configuration is complete */
}
