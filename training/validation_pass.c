#include "validation_pass.h"

#include <math.h>
#include <string.h>

#include "stop_signals.h"

long validation_pass_chars(size_t val_len, long max_chars) {
    long all = (long)val_len - 1;
    return max_chars >= 0 && max_chars < all ? max_chars : all;
}

double validation_pass(GPT *model, const Dataset *ds, long max_chars, int B, int T, int part, int parts,
                       const PassProgress *progress, int *inputs, int *targets, long *count) {
    long scored = validation_pass_chars(ds->val_len, max_chars);  // window k scores characters kT + 1 .. kT + t
    double sum = 0.0;
    for (long first = 0, forward = 0; first < scored; forward++) {
        // up to B windows of T, or the last, shorter one alone
        int t = scored - first < T ? (int)(scored - first) : T;
        long fit = (scored - first) / t;
        int b = fit < B ? (int)fit : B;
        if (forward % parts != part) {
            first += (long)b * t;
            continue;
        }
        if (stop_signals_received()) {
            sum = NAN;
            break;
        }
        pass_progress(progress, first, scored);
        for (int k = 0; k < b; k++) {
            const int *window = ds->val + first + (long)k * t;
            memcpy(inputs + (size_t)k * t, window, (size_t)t * sizeof(int));
            memcpy(targets + (size_t)k * t, window + 1, (size_t)t * sizeof(int));
        }
        gpt_forward(model, inputs, targets, b, t, NULL);
        for (long i = 0; i < (long)b * t; i++) sum += model->acts.losses[i];
        first += (long)b * t;
    }
    if (!isnan(sum)) pass_progress(progress, scored, scored);
    *count = scored;
    return sum / scored;
}
