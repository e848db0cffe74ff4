/* Boot: validate the GPU Specification Table once (magic, version, CRC-32, ranges). */
#include "quco.h"

/* CRC-32 (IEEE, reflected) a nibble at a time: 64 bytes of table, 512 steps for a GST. */
static const uint32_t crc_nibble[16] = {
    0x00000000u, 0x1db71064u, 0x3b6e20c8u, 0x26d930acu, 0x76dc4190u, 0x6b6b51f4u,
    0x4db26158u, 0x5005713cu, 0xedb88320u, 0xf00f9344u, 0xd6d6a3e8u, 0xcb61b38cu,
    0x9b64c2b0u, 0x86d3d2d4u, 0xa00ae278u, 0xbdbdf21cu,
};

static uint32_t gst_crc(void)
{
    const volatile uint8_t *p = (const volatile uint8_t *)QUCO_GST_BASE;
    const uint32_t skip = __builtin_offsetof(quco_gst_t, checksum);
    uint32_t crc = 0xffffffffu;
    for (uint32_t i = 0; i < QUCO_GST_SIZE; i++) {
        uint32_t byte = (i - skip < 4u) ? 0u : p[i]; /* the checksum field counts as zero */
        crc ^= byte;
        crc = (crc >> 4) ^ crc_nibble[crc & 15u];
        crc = (crc >> 4) ^ crc_nibble[crc & 15u];
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
    uint32_t bad = 0;
    if (!is_pow2(g->cache_line_bytes))
        bad = __builtin_offsetof(quco_gst_t, cache_line_bytes);
    else if (g->lds_bytes % 256u)
        bad = __builtin_offsetof(quco_gst_t, lds_bytes);
    else if (!is_pow2(g->min_tile_elems))
        bad = __builtin_offsetof(quco_gst_t, min_tile_elems);
    else if (!is_pow2(g->max_tile_elems) || g->max_tile_elems < g->min_tile_elems)
        bad = __builtin_offsetof(quco_gst_t, max_tile_elems);
    if (bad) {
        *detail = bad;
        return QUCO_STATUS_GST_FIELD;
    }
    return QUCO_STATUS_OK;
}
