// Direct logit attribution: which parts of the model pushed a prediction's logit up. The
// residual stream the final LayerNorm reads at a position is a sum of what each part wrote
// into it: the embeddings (token and position), each attention head's output through its
// slice of c_proj, each layer's c_proj bias, and each MLP's output. With the LayerNorm's
// scale frozen at the position's value (its 1/std, as the forward computed it), the logit of
// character y is linear in that sum, so it splits into one term per part, as TransformerLens
// splits it (apply_ln_to_stack, then the unembedding):
//     logit_y = sum over parts p of  rstd * (p - mean(p)) . (gf * W_U[:, y])  +  bf . W_U[:, y]
// gf, bf the final LayerNorm's scale and bias, W_U = W_E^T the tied head; the c_proj biases
// and bf . W_U[:, y] make the "biases" term. The parts and the biases sum to the logit the
// model computed (to float rounding). The same split of logit_y - logit_z attributes the
// margin of y over a rival z.
//
// At each position the character attributed is the one that came next in the text (at the
// last position, whose next is unknown, the model's most likely one), and its rival the
// most likely other character.
#ifndef CHARGPT_ATTRIBUTION_H
#define CHARGPT_ATTRIBUTION_H

#include "../model/gpt.h"

// The parts, in this order: the embeddings, head (l, h) for every layer and head, the MLP of
// each layer, the biases.
#define ATTRIBUTION_PARTS(c) (2 + (c)->n_layer * (c)->n_head + (c)->n_layer)

typedef struct {
    int t, parts;          // positions, parts (ATTRIBUTION_PARTS)
    int *target, *rival;   // (t) the token attributed at each position and its rival (-1 when V is 1)
    unsigned char *next_known;  // (t) 1 where target is the text's next token, 0 the most likely one
    // (t) the model's own logit of target and logit(target) - logit(rival), and (t, parts) the
    // split of each: logit_parts[i * parts + k]
    double *logit, *difference;
    double *logit_parts, *difference_parts;
    double *work;          // (4C) the directions of a position, and a part of its residual stream
    void *memory;
} LogitAttribution;

// Allocates an attribution of t positions for a model of config c. Returns 0, or -1 with err.
int logit_attribution_init(LogitAttribution *a, const GPTConfig *c, int t, char err[ERR_LEN]);
void logit_attribution_free(LogitAttribution *a);
// The bytes logit_attribution_init allocates.
double logit_attribution_bytes(const GPTConfig *c, int t);

// Attributes the model's last forward, over one sequence of a->t tokens (its first row of the
// batch): next (t) holds each position's next token, or -1 where it is unknown (the most
// likely token is attributed there).
void logit_attribution_compute(LogitAttribution *a, const GPT *model, const int *next);

#endif
