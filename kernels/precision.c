// The precisions' names (kernels.h), which the workspace's messages and the kernels' choice
// (dispatch.c) both write: a file of its own, below both.
#include <string.h>

#include "kernels.h"

int precision_parse(const char *text, Precision *precision) {
    if (strcmp(text, "fp32") == 0) *precision = PRECISION_FP32;
    else if (strcmp(text, "bf16") == 0) *precision = PRECISION_BF16;
    else return -1;
    return 0;
}

const char *precision_name(Precision precision) { return precision == PRECISION_BF16 ? "bf16" : "fp32"; }
