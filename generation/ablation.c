// --ablate and --ablate-mean: the heads the model's hooks knock out, or replace by their mean
// output (analysis/head_means.h) over a reference text (generation/reference_text.h).
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/head_means.h"
#include "../common/platform.h"
#include "../data/corpus.h"
#include "job.h"
#include "reference_text.h"

// --ablate LIST and --ablate-mean LIST (flag): into *flags (freed by the caller however this
// returns), the (L, H) flags of each head of LIST, "L.H" items (layer L's head H, both counted
// from 0) separated by commas. Returns 0; EXIT_USAGE with err naming the item that is not one
// of config's heads; EXIT_DATA with err when memory runs out.
static int parse_heads(const char *flag, const char *list, const GPTConfig *c, unsigned char **flags,
                       char err[ERR_LEN]) {
    *flags = calloc((size_t)c->n_layer * c->n_head, 1);
    if (!*flags) return error_status(err, EXIT_DATA, "out of memory for %s's heads", flag);
    for (const char *item = list;; item++) {
        size_t len = strcspn(item, ",");
        char *end = (char *)item;
        long layer = -1, head = -1;
        if (isdigit((unsigned char)item[0])) layer = strtol(item, &end, 10);
        if (layer >= 0 && *end == '.' && isdigit((unsigned char)end[1])) head = strtol(end + 1, &end, 10);
        if (head < 0 || end != item + len)
            return error_status(err, EXIT_USAGE, "%s %s: '%.*s' is not a head: a head is LAYER.HEAD, both counted "
                                "from 0 (e.g. %s 1.3 or %s 0.0,1.2)", flag, list, (int)len, item, flag, flag);
        if (layer >= c->n_layer || head >= c->n_head)
            return error_status(err, EXIT_USAGE, "%s %.*s: the model has no such head (layers 0 to %d, heads 0 to %d)",
                                flag, (int)len, item, c->n_layer - 1, c->n_head - 1);
        (*flags)[layer * c->n_head + head] = 1;
        item += len;
        if (!*item) break;
    }
    return 0;
}

int knock_out_heads(Job *j, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    const GPTConfig *c = &j->ck.config;
    const int heads = c->n_layer * c->n_head;
    j->edits = calloc(2 * (size_t)heads, sizeof(ActivationEdit));
    if (!j->edits) return error_status(err, EXIT_DATA, "out of memory for --ablate's heads");
    j->hooks = (ForwardHooks){.heads = j->edits};
    unsigned char *knocked = NULL;
    int status = o->ablate ? parse_heads("--ablate", o->ablate, c, &knocked, err) : 0;
    if (status == 0 && o->ablate_mean) status = parse_heads("--ablate-mean", o->ablate_mean, c, &j->mean_ablated, err);
    for (int i = 0; status == 0 && knocked && i < heads; i++) {
        if (knocked[i] && j->mean_ablated && j->mean_ablated[i])
            status = error_status(err, EXIT_USAGE, "head %d.%d is in --ablate and in --ablate-mean: it can be knocked "
                                  "out or replaced by its mean, not both", i / c->n_head, i % c->n_head);
        else if (knocked[i])
            j->edits[j->hooks.n_heads++] = (ActivationEdit){.layer = i / c->n_head, .head = i % c->n_head};
    }
    free(knocked);
    return status;
}

int read_reference(Job *j, char err[ERR_LEN]) {
    const GenerateOptions *o = &j->o;
    if (!o->ablate_mean && !o->num_attention) return 0;
    GPTMemoryPlan plan;
    gpt_memory_plan(&j->ck.config, 1, GPT_PLAN_FORWARD, &plan);
    const char *source;
    double limit = j->memory_limit(o, &source), held = gpt_memory_total(&plan) + (double)j->ck.file.file_len;
    size_t max_chars = limit > 0 ? corpus_max_chars(limit > held ? limit - held : 0) : CORPUS_NO_LIMIT;
    char why[ERR_LEN];
    int rc = reference_text_load(&j->ck, &j->vocab, o->mean_over, max_chars, &j->reference, j->reference_name,
                                 sizeof(j->reference_name), why);
    if (rc != 0 && (o->ablate_mean || o->mean_over))
        return error_status(err, rc, "%s%s", o->ablate_mean ? "--ablate-mean: " : "", why);
    if (rc != 0) {
        fprintf(stderr, "%s: note: the pages show no importance by the mean: %s\n", program_name(), why);
        j->reference_name[0] = '\0';
    }
    if (rc == 0 && o->mean_over) prompt_warn_dropped(&j->reference, o->mean_over);
    return 0;
}

#define MEANS_MAX_WINDOWS 64  // the reference text's windows the means are taken over, at most
int take_head_means(Job *j, char err[ERR_LEN]) {
    if (!j->reference_name[0]) return 0;
    GPT *model = &j->model;
    const GPTConfig *c = &model->config;
    long len = j->reference.len < (long)MEANS_MAX_WINDOWS * c->block_size ? j->reference.len
                                                                           : (long)MEANS_MAX_WINDOWS * c->block_size;
    j->head_means = malloc((size_t)c->n_layer * c->n_head * c->head_size * sizeof(float));
    if (!j->head_means) return error_status(err, EXIT_DATA, "out of memory for the heads' means");
    if (gpt_alloc_activations(model, 1, err) != 0 || head_means(model, j->reference.tokens, len, j->head_means, err) != 0)
        return EXIT_DATA;
    if (!j->mean_ablated) return 0;
    j->hooks.n_heads += head_means_edits(c, j->head_means, j->mean_ablated, j->edits + j->hooks.n_heads);
    model->hooks = &j->hooks;
    return 0;
}
