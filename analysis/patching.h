// Activation patching: which component, its output moved from a clean run into a corrupted
// one, restores the clean run's answer. Two texts of the same length t go through the model:
// the clean one, whose most likely next character after the last is a, and the corrupted one
// (a few characters changed), whose is b != a. The metric is the logit difference
//     m = logit(a) - logit(b)   at the last position,
// large on the clean run (m_clean > 0) and below 0 on the corrupted one. The corrupted run is
// then made again with one component's output replaced by the clean run's (model/gpt.h's
// hooks), and the share of the difference that comes back,
//     (m_patched - m_corrupted) / (m_clean - m_corrupted),
// is 1 when that component alone carries what the corruption changed and 0 when it carries
// none of it, as TransformerLens's patching functions measure it:
//   heads     each head's output (before c_proj) at every position
//             (get_act_patch_attn_head_out_all_pos): L H runs;
//   residual  the residual stream entering each block, and the one entering ln_f, at one
//             position (get_act_patch_resid_pre): (L + 1) t runs. Patching the stream entering
//             block 0 at every position makes the clean run itself: the share is exactly 1.
#ifndef CHARGPT_PATCHING_H
#define CHARGPT_PATCHING_H

#include "../model/gpt.h"

typedef struct {
    int n_layer, n_head, t;
    int answer_clean, answer_corrupted;      // a and b: each run's most likely next token
    double metric_clean, metric_corrupted;   // m on each run
    double *heads;     // (L, H) the share each head's output restores
    double *residual;  // (L + 1, t) the share the stream entering block l (L: ln_f) at position i restores
    void *memory;      // and the clean run's record
} Patching;

// What a caller shows while the runs go: done of total.
typedef void (*PatchingProgress)(void *context, long done, long total);

// The bytes patching_run allocates for t positions of a model of config c.
double patching_bytes(const GPTConfig *c, int t);

// Patches every head and every position of the residual stream of corrupted into clean's
// (tokens, t each, 1 <= t <= block_size; the model's activations hold a sequence). The hooks
// the model has already (model->hooks: a mean ablation) apply to every run; it leaves the
// last run's activations. progress (NULL: none) is called after each run. Returns 0; -1 with
// err when memory runs out; -2 with err when the two texts' most likely next characters are
// the same (nothing to restore) or their logit differences are equal.
int patching_run(Patching *p, GPT *model, const int *clean, const int *corrupted, int t, PatchingProgress progress,
                 void *context, char err[ERR_LEN]);
void patching_free(Patching *p);

#endif
