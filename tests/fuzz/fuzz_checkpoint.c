// Fuzz target: the checkpoint loader, past the CRC.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../format/checkpoint.h"
#include "../../model/adamw.h"
#include "../../training/run_state.h"
#include "fuzz.h"

// A copy of the input whose crc32 is what its format says it should be, so that mutations
// reach the checks after the CRC; NULL when the input has no crc32 of 8 plain hex digits.
static uint8_t *with_valid_crc(const uint8_t *data, size_t size) {
    SafeTensors st;
    char err[ERR_LEN];
    if (safetensors_parse(data, size, "fuzz", &st, err) != 0) return NULL;
    uint32_t crc;
    uint8_t *fixed = NULL;
    const char *format = safetensors_meta(&st, "format");
    if (safetensors_file_crc(&st, "crc32", &crc) == 0) {
        if (format && strcmp(format, CHECKPOINT_FORMAT_V1) == 0) crc = safetensors_data_crc(&st);
        // the digits sit where the header's crc32 value is: find them in the file as read
        const char *stored = safetensors_meta(&st, "crc32");
        int i = 0;
        while (i < st.num_meta && st.meta[i].value != stored) i++;
        fixed = malloc(size);
        memcpy(fixed, data, size);
        char digits[9];
        snprintf(digits, sizeof(digits), "%08" PRIx32, crc);
        memcpy(fixed + st.meta_at[i] + 1, digits, 8);
    }
    safetensors_free(&st);
    return fixed;
}

int fuzz_checkpoint(const uint8_t *data, size_t size) {
    uint8_t *fixed = with_valid_crc(data, size);
    Checkpoint ck;
    char err[ERR_LEN];
    int rc = checkpoint_parse(fixed ? fixed : data, size, "fuzz", &ck, err);
    free(fixed);
    if (rc != 0) {
        if (strncmp(err, "fuzz: ", 6) != 0) abort();
        return 0;
    }
    // what ./train --resume and ./generate read from an accepted checkpoint
    TrainOptions options;
    TrainState state;
    memset(&options, 0, sizeof(options));
    memset(&state, 0, sizeof(state));
    run_meta_read(&ck, &options, &state, err);
    GPTMemoryPlan plan;
    gpt_memory_plan(&ck.config, 1 + (int)(size % 64), 1, &plan);
    gpt_memory_plan(&ck.config, 1, 0, &plan);
    GPT model;
    if (checkpoint_load_model(&ck, &model, 0, err) == 0) {
        AdamW opt;
        if (ck.has_optimizer && adamw_init(&opt, &model, 0.9f, 0.99f, 1e-8f, 0.1f, err) == 0) {
            if (checkpoint_load_optimizer(&ck, &opt, err) != 0) abort();
            adamw_free(&opt);
        }
        gpt_free(&model);
    }
    checkpoint_close(&ck);
    return 0;
}
