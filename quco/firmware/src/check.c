/* Per launch, first: validate the record the host wrote in the mailbox, copying it into
 * the launch and grouping identical consecutive queues for the planner (algorithm.c).
 * host/reference.py (parse_launch) is the executable specification: the same checks in
 * the same order, so the first bad field is the same detail. */
#include "quco.h"

/* The rules themselves, their order and the status and detail of each are gst/abi.py's
 * (LAUNCH_CHECKED, QUEUE_CHECKED): QUCO_HEADER_CHECK and queue_status are generated
 * from them into quco_abi.h, as the reference model reads them. */

_Static_assert(QUCO_QUEUE_LENGTH_WORD == 0u && QUCO_QUEUE_TYPE_WORD == 1u && QUCO_QUEUE_ELEM_SIZE_WORD == 1u &&
               QUCO_QUEUE_PASSES_WORD == 1u, "a queue record is its length, then one word of the rest");

/* Copies the record from the mailbox into l while validating it, so every word is read
 * once, and gathers identical consecutive queues into groups on the way. */
uint32_t launch_check(const volatile uint32_t *src, launch_t *l, groups_t *groups, uint32_t *detail)
{
    const quco_launch_header_t *h = &l->h;
    uint32_t *dst = (uint32_t *)l;
    for (uint32_t i = 0; i < sizeof(quco_launch_header_t) / 4u; i += 4) { /* 2 steps, not 8 */
        uint32_t w0 = src[i], w1 = src[i + 1], w2 = src[i + 2], w3 = src[i + 3];
        dst[i] = w0;
        dst[i + 1] = w1;
        dst[i + 2] = w2;
        dst[i + 3] = w3;
    }
    QUCO_HEADER_CHECK(h, GST, detail); /* returns the status of a bad header */
    uint32_t n = h->num_queues;
    /* A queue identical to the one before joins its group without being checked again:
     * the first invalid queue is still the one reported. */
    const volatile uint32_t *in = src + sizeof(quco_launch_header_t) / 4u;
    uint32_t *out = dst + sizeof(quco_launch_header_t) / 4u;
    uint32_t n_groups = 0, prev_length = 0, prev_word1 = 0, n_stationary = 0;
    uint32_t max_elem = 0, max_stream_elem = 0, step_bytes = 0;
    uint32_t min_len = 0xffffffffu;
    uint32_t count = 0, stationary = 0; /* the current group's, kept rather than read back */
    group_t *group = groups->g - 1;
    for (uint32_t i = 0; i < n; i++, in += QUCO_QUEUE_WORDS, out += QUCO_QUEUE_WORDS) {
        uint32_t length = in[0], word1 = in[1]; /* word1: type, element size, passes */
        out[0] = length;
        out[1] = word1;
        if (n_groups && length == prev_length && word1 == prev_word1) {
            group->count = (uint8_t)++count;
            n_stationary += stationary;
            if (!stationary)
                step_bytes += group->elem_size;
            continue;
        }
        uint32_t status = queue_status(length, word1);
        if (status != QUCO_STATUS_OK) {
            *detail = i;
            return status;
        }
        stationary = (word1 >> QUCO_QUEUE_TYPE_SHIFT) & QUCO_QUEUE_TYPE_MASK; /* the type is 0 or 1 */
        uint32_t elem_size = (word1 >> QUCO_QUEUE_ELEM_SIZE_SHIFT) & QUCO_QUEUE_ELEM_SIZE_MASK;
        group++;
        n_groups++;
        count = 1;
        group->count = 1;
        group->stationary = (uint8_t)stationary;
        group->elem_size = (uint8_t)elem_size;
        group->elem_log2 = (uint8_t)log2_elem(elem_size);
        group->length = length;
        n_stationary += stationary;
        max_elem = elem_size > max_elem ? elem_size : max_elem;
        min_len = length < min_len ? length : min_len;
        if (!stationary) {
            max_stream_elem = elem_size > max_stream_elem ? elem_size : max_stream_elem;
            step_bytes += elem_size;
        }
        prev_length = length;
        prev_word1 = word1;
    }
    groups->n_groups = n_groups;
    groups->n_stationary = n_stationary;
    /* the tile is chosen for the largest streaming element, or the largest of all when
     * every queue is stationary */
    groups->tile_elem_size = max_stream_elem ? max_stream_elem : max_elem;
    groups->min_len = min_len;
    groups->step_bytes = step_bytes;
    groups->n_streaming = n - n_stationary;
    return QUCO_STATUS_OK;
}
