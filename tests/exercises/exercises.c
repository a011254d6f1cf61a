// The exercises, in the order a learner takes them: each layer's forward before its
// backward, the easier layers first (check.h). docs/exercises.md has the same list, with
// what each teaches; scripts/check_exercises.sh checks that the two agree.
#include <string.h>

#include "check.h"

const Exercise exercise_list[] = {
    {"gelu", "gelu_forward", "kernels/plain.c", 10, check_gelu},
    {"gelu_backward", "gelu_backward", "kernels/plain.c", 20, check_gelu_backward},
    {"softmax", "softmax_row", "kernels/plain.c", 15, check_softmax},
    {"crossentropy", "crossentropy_forward", "model/layers.c", 20, check_crossentropy},
    {"crossentropy_backward", "crossentropy_backward", "model/layers.c", 15, check_crossentropy_backward},
    {"linear", "linear_forward", "kernels/plain.c", 15, check_linear},
    {"linear_backward", "linear_backward", "kernels/plain.c", 30, check_linear_backward},
    {"layernorm", "layernorm_forward", "kernels/plain.c", 25, check_layernorm},
    {"layernorm_backward", "layernorm_backward", "kernels/plain.c", 60, check_layernorm_backward},
    {"adamw", "adamw_update", "model/adamw.c", 25, check_adamw},
    {"attention", "attention_forward", "model/attention.c", 45, check_attention},
    {"attention_backward", "attention_backward", "model/attention.c", 75, check_attention_backward},
};
const int exercise_count = sizeof(exercise_list) / sizeof(exercise_list[0]);

const Exercise *exercise_find(const char *name) {
    for (int i = 0; i < exercise_count; i++)
        if (strcmp(exercise_list[i].name, name) == 0) return &exercise_list[i];
    return NULL;
}
