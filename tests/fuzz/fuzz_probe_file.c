// Fuzz target: the probe file's reader (format/probe_file.h), past its CRCs.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../../common/platform.h"
#include "../../format/probe_file.h"
#include "fuzz.h"

static uint32_t get_u32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

// A copy of the input whose every whole frame (the header, then the records) carries the CRC
// of its payload, so that mutations reach the checks after the CRCs.
static uint8_t *with_valid_crcs(const uint8_t *data, size_t size) {
    uint8_t *fixed = malloc(size + 1);
    memcpy(fixed, data, size);
    for (size_t at = 8; at + 8 <= size;) {
        uint32_t len = get_u32(fixed + at);
        if (len > size - at - 8) break;
        put_u32(fixed + at + 4 + len, (uint32_t)crc32(0L, fixed + at + 4, len));
        at += (size_t)len + 8;
    }
    return fixed;
}

int fuzz_probe_file(const uint8_t *data, size_t size) {
    uint8_t *fixed = with_valid_crcs(data, size);
    FILE *fp = platform_memory_stream(fixed, size ? size : 1);
    if (!fp) abort();
    ProbeReader r;
    char err[ERR_LEN];
    if (probe_reader_open(&r, fp, "fuzz", err) == 0) {
        const ProbeHeader *h = &r.header;
        if (probe_record_bytes(h) > PROBE_MAX_RECORD || h->probe_len > h->block_size) abort();
        for (int i = 0; i <= h->probe_len; i++)
            if (h->passage[i] < 0 || h->passage[i] >= h->vocab_size) abort();
        ProbeRecord rec;
        if (probe_record_alloc(&rec, h, err) == 0) {
            int64_t last = -1;
            while (probe_reader_next(&r, &rec, err) == 1) {
                if (rec.step <= last || r.payload_len != (rec.flags & PROBE_HAS_PROBE ? probe_record_bytes(h)
                                                                                     : probe_light_bytes(h)))
                    abort();
                for (int i = 0; (rec.flags & PROBE_HAS_SAMPLE) && i < h->sample_chars; i++)
                    if (rec.sample[i] < 0 || rec.sample[i] >= h->vocab_size) abort();
                last = rec.step;
            }
            probe_record_free(&rec);
        }
        probe_reader_close(&r);
    } else if (strncmp(err, "fuzz", 4) != 0 && strncmp(err, "cannot read fuzz", 16) != 0) {
        abort();  // every message names the file
    }
    fclose(fp);
    free(fixed);
    return 0;
}
