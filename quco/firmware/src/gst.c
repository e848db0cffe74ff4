/* Boot: validate the GPU Specification Table once (magic, version, CRC-32, ranges). */
#include "quco.h"

/* CRC-32 (IEEE, reflected) a bit at a time over the GST's 64 little-endian words: no
 * table in ROM. It runs once per reset (about 14,000 instructions), so ROM wins over
 * speed here: the nibble-table version took 92 more bytes of ROM. */
_Static_assert(__builtin_offsetof(quco_gst_t, checksum) % 4u == 0, "checksum is one whole word");
static uint32_t gst_crc(void)
{
    const uint32_t *w = (const uint32_t *)QUCO_GST_BASE;
    const uint32_t skip = __builtin_offsetof(quco_gst_t, checksum) / 4u;
    uint32_t crc = 0xffffffffu;
    for (uint32_t i = 0; i < QUCO_GST_SIZE / 4u; i++) {
        crc ^= i == skip ? 0u : w[i]; /* the checksum field counts as zero */
        for (uint32_t bit = 0; bit < 32u; bit++)
            crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1u));
    }
    return ~crc;
}

static int is_pow2(uint32_t v) { return v && !(v & (v - 1)); }

static const uint16_t check_lo[QUCO_GST_NUM_CHECKS] = QUCO_GST_CHECKS_LO;
static const uint32_t check_hi[QUCO_GST_NUM_CHECKS] = QUCO_GST_CHECKS_HI;

uint32_t gst_check(uint32_t *detail)
{
    const quco_gst_t *g = GST;
    *detail = 0;
    if (g->magic != QUCO_GST_MAGIC)
        return QUCO_STATUS_GST_MAGIC;
    if (g->version != QUCO_GST_VERSION || g->size != QUCO_GST_SIZE)
        return QUCO_STATUS_GST_VERSION;
    if (g->checksum != gst_crc())
        return QUCO_STATUS_GST_CHECKSUM;
    const uint32_t *field = (const uint32_t *)(QUCO_GST_BASE + QUCO_GST_FIRST_CHECKED);
    for (uint32_t i = 0; i < QUCO_GST_NUM_CHECKS; i++) {
        if (field[i] < check_lo[i] || field[i] > check_hi[i]) {
            *detail = QUCO_GST_FIRST_CHECKED + 4u * i;
            return QUCO_STATUS_GST_FIELD;
        }
    }
    uint32_t bad = QUCO_GST_SHAPE_FAULT(g, is_pow2); /* power of two, multiple of 256, ... (gst/abi.py) */
    if (bad) {
        *detail = bad;
        return QUCO_STATUS_GST_FIELD;
    }
    return QUCO_STATUS_OK;
}
