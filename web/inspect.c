// The page's inspector ("Take a model apart" in web/chargpt.html): one checkpoint open in a
// module instance that the page's worker (web/worker.js) keeps, and for each text the person
// types, with the heads they knocked out, what ./generate gives for it: the text's loss in
// bits per character as --score gives it (generation/score.h, stride 1, the cache), and the
// inspector's page as --attention FILE.html writes it (generation/attention_record.h: every
// head's attention, the surprisal, the top predictions, the logit lens, the vectors behind
// the attention math), each head's importance measured only when asked (its L*H forwards).
//
// The worker calls inspect_open and inspect_update through ccall; each answers with one JSON
// object (its text valid until the next call), which holds "error" when the call failed.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/errors.h"
#include "../common/program.h"
#include "../format/checkpoint.h"
#include "../format/json.h"
#include "../generation/attention_record.h"
#include "../generation/prompt.h"
#include "../generation/score.h"
#include "../viewer/attention_export.h"

static struct {
    int open;
    GPT model;
    Vocab vocab;
    ActivationEdit *knocked_out;  // (L*H) the heads knocked out, the hooks' edits
    ForwardHooks hooks;
    JsonBuf answer;
} session;

static void close_session(void) {
    if (!session.open) return;
    gpt_free(&session.model);
    vocab_free(&session.vocab);
    free(session.knocked_out);
    session.knocked_out = NULL;
    session.open = 0;
}

// The answer {"error": err}.
static const char *error_answer(const char *err) {
    json_buf_free(&session.answer);
    session.answer = (JsonBuf){0};
    json_buf_append(&session.answer, "{\"error\":", 9);
    json_buf_string(&session.answer, err, strlen(err));
    json_buf_append(&session.answer, "}", 1);
    return session.answer.failed ? "{\"error\":\"out of memory\"}" : session.answer.data;
}

// The memory the inspector may take, as ./generate reckons it (common/program.h): {"bytes",
// "text"}, what the page says of the largest model it takes.
const char *inspect_limit(void) {
    const char *source;
    double limit = memory_limit(0.0, 1, &source);
    char bytes[32];
    format_bytes(limit, bytes, sizeof(bytes));
    json_buf_free(&session.answer);
    session.answer = (JsonBuf){0};
    json_buf_printf(&session.answer, "{\"bytes\":%.0f,\"text\":", limit);
    char text[256];
    snprintf(text, sizeof(text), "%s %s", bytes, source);
    json_buf_string(&session.answer, text, strlen(text));
    json_buf_append(&session.answer, "}", 1);
    return session.answer.failed ? "{\"error\":\"out of memory\"}" : session.answer.data;
}

// Opens the checkpoint at path (in the module's file system) as ./generate does, checked whole
// before anything sized by its config is allocated, and refused when the inspector's work on a
// window of block_size characters (a forward, its recording, its page) needs more memory than
// the module may take. Answers with the model's sizes: {"n_layer", "n_head", "n_embd",
// "head_size", "block_size", "vocab_size", "position", "parameters", "step"}.
const char *inspect_open(const char *path) {
    close_session();
    char err[ERR_LEN];
    const char *source;
    double limit = memory_limit(0.0, 1, &source);
    Checkpoint ck;
    int rc = checkpoint_open_within(path, limit, &ck, err);
    if (rc != 0) {
        if (rc == -2) snprintf(err + strlen(err), ERR_LEN - strlen(err), " %s", source);
        return error_answer(err);
    }
    const GPTConfig *c = &ck.config;
    GPTMemoryPlan plan;
    gpt_memory_plan(c, SCORE_BATCH, GPT_PLAN_FORWARD, &plan);
    plan.generation = attention_record_memory(c, c->block_size) + gpt_generation_floats(c, 1) * sizeof(float);
    if (limit > 0 && gpt_memory_total(&plan) > limit) {
        char needed[32], limit_text[32];
        format_bytes(gpt_memory_total(&plan), needed, sizeof(needed));
        format_bytes(limit, limit_text, sizeof(limit_text));
        snprintf(err, ERR_LEN, "%s: inspecting this model (%d layers, %d heads, n_embd %d, block size %d) needs %s, "
                 "more than the %s %s", path, c->n_layer, c->n_head, c->n_embd, c->block_size, needed, limit_text,
                 source);
        checkpoint_close(&ck);
        return error_answer(err);
    }
    long step = ck.optimizer_step;
    rc = checkpoint_vocab(&ck, &session.vocab, err);
    if (rc == 0) rc = checkpoint_load_model(&ck, &session.model, 0, err);
    checkpoint_close(&ck);
    if (rc != 0) {
        vocab_free(&session.vocab);
        return error_answer(err);
    }
    c = &session.model.config;
    session.knocked_out = calloc((size_t)c->n_layer * c->n_head, sizeof(ActivationEdit));
    if (!session.knocked_out) {
        gpt_free(&session.model);
        vocab_free(&session.vocab);
        return error_answer("out of memory for the model's hooks");
    }
    session.hooks = (ForwardHooks){.heads = session.knocked_out};
    session.open = 1;
    json_buf_free(&session.answer);
    session.answer = (JsonBuf){0};
    json_buf_printf(&session.answer,
                    "{\"n_layer\":%d,\"n_head\":%d,\"n_embd\":%d,\"head_size\":%d,\"block_size\":%d,\"vocab_size\":%d,"
                    "\"position\":\"%s\",\"parameters\":%zu,\"step\":%ld}",
                    c->n_layer, c->n_head, c->n_embd, c->head_size, c->block_size, c->vocab_size,
                    position_name(c->position), session.model.num_parameters, step);
    return session.answer.failed ? error_answer("out of memory") : session.answer.data;
}

// The model's hooks knock out the heads whose flag is set in knocked (L*H bytes, head h of
// layer l at l*H + h), as ./generate --ablate does.
static void knock_out(const unsigned char *knocked) {
    const GPTConfig *c = &session.model.config;
    session.hooks.n_heads = 0;
    for (int i = 0; i < c->n_layer * c->n_head; i++)
        if (knocked[i])
            session.knocked_out[session.hooks.n_heads++] = (ActivationEdit){.layer = i / c->n_head, .head = i % c->n_head};
    session.model.hooks = session.hooks.n_heads ? &session.hooks : NULL;
}

#define INSPECT_MAX_BYTES (1 << 20)  // a longer text is refused, as ./generate refuses such a prompt file

// The text (UTF-8, in the file at text_path) read by the open model with the heads of `knocked` knocked out: its loss as
// ./generate --score gives it (when it has 2 characters or more), and the inspector's page over
// its last block_size characters written to page_path (each head's importance measured when
// importance is 1). Answers {"chars", "scored", "bits_per_char" (null under 2 characters),
// "window"}; an unknown character is an error naming it.
const char *inspect_update(const char *text_path, const unsigned char *knocked, int importance,
                           const char *page_path) {
    if (!session.open) return error_answer("no checkpoint is open");
    char err[ERR_LEN], *text;
    size_t bytes;
    knock_out(knocked);
    if (prompt_read_file(text_path, INSPECT_MAX_BYTES, &text, &bytes, err) != 0) return error_answer(err);
    Prompt p = {0};
    int rc = prompt_encode(&p, &session.vocab, text, bytes, 0, "the text", err);
    free(text);
    if (rc != 0) return error_answer(err);
    if (p.len == 0) {
        prompt_free(&p);
        return error_answer("no text to read: type a few characters");
    }
    Score score = {0, 0.0};
    if (p.len >= 2 && score_tokens(&session.model, p.tokens, p.len, 1, 1, NULL, &score, err) != 0) {
        prompt_free(&p);
        return error_answer(err);
    }
    const char *paths[1] = {page_path};
    int written;
    AttentionExtras extras = {.skip_importance = !importance};
    rc = attention_record(&session.model, &session.vocab, p.tokens, p.len, &extras, paths, 1, 1, &written, err);
    long chars = p.len;
    int window = chars < session.model.config.block_size ? (int)chars : session.model.config.block_size;
    prompt_free(&p);
    if (rc != 0) return error_answer(err);
    json_buf_free(&session.answer);
    session.answer = (JsonBuf){0};
    json_buf_printf(&session.answer, "{\"chars\":%ld,\"scored\":%ld,\"window\":%d,\"bits_per_char\":", chars,
                    score.scored, window);
    if (score.scored > 0) json_buf_printf(&session.answer, "%.6f}", score.sum_nats / score.scored / M_LN2);
    else json_buf_append(&session.answer, "null}", 5);
    return session.answer.failed ? error_answer("out of memory") : session.answer.data;
}
