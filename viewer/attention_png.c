// .png: a grid of heatmaps (rows = layers, columns = heads) written by hand: signature,
// IHDR, one IDAT holding the zlib stream of the scanlines (each with filter byte 0, none),
// IEND; every chunk ends with the CRC-32 of its type and data.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "attention_formats.h"

#define PANEL_GAP 3  // white pixels between panels and around the grid

static const unsigned char MASKED[3] = {215, 215, 215};  // cells above the diagonal

// A viridis-like colour map: five anchors from dark purple through blue and green to
// yellow, evenly spaced on [0, 1] and linearly interpolated into a 256-entry table.
static const unsigned char COLOUR_ANCHORS[5][3] = {
    {68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};

static void build_colour_table(unsigned char table[256][3]) {
    for (int k = 0; k < 256; k++) {
        float x = k / 255.0f * 4.0f;  // position among the anchors
        int a = x >= 4.0f ? 3 : (int)x;
        float f = x - (float)a;
        for (int c = 0; c < 3; c++) {
            float v = (1.0f - f) * COLOUR_ANCHORS[a][c] + f * COLOUR_ANCHORS[a + 1][c];
            table[k][c] = (unsigned char)lrintf(v);
        }
    }
}

// Colour-table index of a weight: sqrt spreads the small weights a long context produces.
static int colour_index(float w) {
    if (!(w > 0.0f)) return 0;  // also NaN
    if (w >= 1.0f) return 255;
    return (int)lrintf(sqrtf(w) * 255.0f);
}

// Pixels per cell: a panel of about 512 pixels, the grid within about 2048, 1 to 8.
static int cell_size(int t, int n_layer, int n_head) {
    int most_panels = n_layer > n_head ? n_layer : n_head;
    int s = 512 / t;
    int fit = (int)(2048 / ((long)t * most_panels));
    if (fit < s) s = fit;
    if (s > 8) s = 8;
    if (s < 1) s = 1;
    return s;
}

static void put_u32(unsigned char *p, uint32_t x) {
    p[0] = (unsigned char)(x >> 24);
    p[1] = (unsigned char)(x >> 16);
    p[2] = (unsigned char)(x >> 8);
    p[3] = (unsigned char)x;
}

// One chunk: length, type, data, CRC-32 over type and data.
static void write_chunk(FILE *fp, const char type[4], const unsigned char *data, size_t len) {
    unsigned char word[4];
    put_u32(word, (uint32_t)len);
    fwrite(word, 1, 4, fp);
    fwrite(type, 1, 4, fp);
    if (len) fwrite(data, 1, len, fp);
    uLong crc = crc32(0L, (const Bytef *)type, 4);
    if (len) crc = crc32(crc, data, (uInt)len);
    put_u32(word, (uint32_t)crc);
    fwrite(word, 1, 4, fp);
}

int attention_write_png(FILE *fp, const Attention *a, char err[ERR_LEN]) {
    int t = a->t, L = a->n_layer, H = a->n_head;
    int s = cell_size(t, L, H);
    long panel = (long)t * s;
    long width = H * panel + (H + 1) * PANEL_GAP;
    long height = L * panel + (L + 1) * PANEL_GAP;
    if (width > 30000 || height > 30000) {
        snprintf(err, ERR_LEN, "%s: a %ld x %ld image is too large to write", a->path, width,
                 height);
        return -1;
    }
    size_t stride = 1 + 3 * (size_t)width;  // filter byte + RGB pixels
    size_t raw_len = stride * (size_t)height;
    unsigned char *raw = malloc(raw_len);
    uLongf packed_len = compressBound((uLong)raw_len);
    unsigned char *packed = malloc(packed_len);
    if (!raw || !packed) {
        free(raw);
        free(packed);
        snprintf(err, ERR_LEN, "%s: out of memory for a %ld x %ld image", a->path, width,
                 height);
        return -1;
    }
    unsigned char colours[256][3];
    build_colour_table(colours);

    // white background with filter byte 0 on every scanline, then each panel's cells
    memset(raw, 255, raw_len);
    for (long y = 0; y < height; y++) raw[y * stride] = 0;
    for (int l = 0; l < L; l++) {
        for (int h = 0; h < H; h++) {
            const float *head = a->att + ((size_t)l * H + h) * t * t;
            long x0 = PANEL_GAP + h * (panel + PANEL_GAP);
            long y0 = PANEL_GAP + l * (panel + PANEL_GAP);
            for (int i = 0; i < t; i++) {
                // first scanline of the query row, copied to the other s - 1 below
                unsigned char *line = raw + (y0 + (long)i * s) * stride + 1 + 3 * x0;
                for (int j = 0; j < t; j++) {
                    const unsigned char *rgb =
                        j > i ? MASKED : colours[colour_index(head[(size_t)i * t + j])];
                    for (int k = 0; k < s; k++) memcpy(line + 3 * ((long)j * s + k), rgb, 3);
                }
                for (int k = 1; k < s; k++) memcpy(line + k * stride, line, 3 * (size_t)panel);
            }
        }
    }

    // level 3: the panels are runs of few colours, so faster levels lose little size
    int rc = compress2(packed, &packed_len, raw, (uLong)raw_len, 3);
    free(raw);
    if (rc != Z_OK) {
        free(packed);
        snprintf(err, ERR_LEN, "%s: zlib compression failed (code %d)", a->path, rc);
        return -1;
    }
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    fwrite(signature, 1, 8, fp);
    unsigned char ihdr[13];
    put_u32(ihdr, (uint32_t)width);
    put_u32(ihdr + 4, (uint32_t)height);
    ihdr[8] = 8;   // bits per channel
    ihdr[9] = 2;   // colour type: RGB
    ihdr[10] = 0;  // compression: deflate
    ihdr[11] = 0;  // filter method 0
    ihdr[12] = 0;  // no interlace
    write_chunk(fp, "IHDR", ihdr, sizeof(ihdr));
    write_chunk(fp, "IDAT", packed, packed_len);
    write_chunk(fp, "IEND", NULL, 0);
    free(packed);
    return 0;
}
