#include "options.h"

#include <inttypes.h>

#include "../common/platform.h"
#include "../format/onnx.h"
#include "../kernels/parallel.h"
#include "../viewer/attention_export.h"
#include "../viewer/circuits_export.h"
#include "export.h"
#include "logits_record.h"

void generate_usage(FILE *f, const GenerateOptions *d) {
    fprintf(f,
            "usage: %s CKPT [PROMPT] [options]   (a PROMPT that starts with '-' goes after '--':\n"
            "       %s CKPT [options] -- PROMPT)\n"
            "       %s --timeline RUN_DIR [--force]\n"
            "Streams text sampled from a checkpoint written by ./train (or, with --score, scores a text).\n"
            "Each option is given once; --attention may be given once per file.\n\n"
            "  -n, --max-new N        characters to generate; 0 only reads the prompt (default %ld)\n"
            "  -t, --temperature F    sampling temperature; 0 = greedy argmax (default %g)\n"
            "  -k, --top-k N          sample among the N most likely; 0 = off (default %d)\n"
            "  -p, --top-p F          nucleus sampling: smallest set with mass F; 1 = off (default %g)\n"
            "  -s, --seed N           random seed; same seed and options give the same text (default %" PRIu64 ")\n"
            "  -f, --prompt-file FILE read the prompt from FILE ('-' for stdin)\n"
            "      --num-samples N    N samples of the prompt, decoded together and printed one after\n"
            "                         another; sample i uses seed + i (default %d)\n"
            "      --stride S         once the text is longer than block_size, move the window on by S\n"
            "                         characters and prefill it again (1 <= S <= block_size); 1 = the\n"
            "                         window is always the last block_size characters, exactly as\n"
            "                         nanoGPT reads them, at a full prefill per character; larger S\n"
            "                         is faster and sees between block_size + 1 - S and block_size\n"
            "                         characters (default %d). A RoPE model (./train --pos rope) with\n"
            "                         stride 1 rolls its cache on instead, a position per character:\n"
            "                         each layer attends to the last block_size positions, whose\n"
            "                         cached keys saw the text before them too\n"
            "      --skip-unknown     drop prompt (or scored) characters the model never saw\n"
            "                         (default: they take the model's unknown token if it has one,\n"
            "                         else an error naming them)\n"
            "      --no-cache         recompute the whole window for every character (for checking;\n"
            "                         with --score, a RoPE model's exact window, not its rolling cache)\n"
            "      --attention FILE   record the attention weights of every layer and head over the\n"
            "                         processed text (its last block_size characters): .json, .csv,\n"
            "                         .png or .html (an interactive viewer); may be given up to %d\n"
            "                         times, every file's directory checked before the model runs\n"
            "      --score FILE       print the model's mean loss on FILE (plain or gzip; '-' for\n"
            "                         stdin) in nats and bits per character and as perplexity, each\n"
            "                         character after the first predicted from the ones before it\n"
            "                         through the window --stride gives\n"
            "      --score-task       for a model of ./train --task: score the task's validation split\n"
            "                         as the run's evaluations read it, on what can be predicted (the\n"
            "                         repeated half, the answer) and on every character, in bits per\n"
            "                         character, with the share of the predictable ones it gets right\n"
            "      --rows N           with --score-task: score the split's first N rows of block_size + 1\n"
            "                         characters (default: the rows the run's evaluations read)\n"
            "      --encoding E       with --score: the text's encoding, utf-8, latin-1 or cp1252\n"
            "                         (default utf-8)\n"
            "      --surprisal FILE   with --score: write one CSV row per scored character (position,\n"
            "                         character, loss in bits, probability, top 5 predictions); FILE\n"
            "                         is checked before the text is read, as --attention's are\n"
            "      --logits FILE      write the logits over the processed text (its last block_size\n"
            "                         characters, as --attention's) to FILE, a .json: {\"tokens\",\n"
            "                         \"chars\", \"logits\": [position][vocabulary]}, 9 digits each\n"
            "      --ablate L.H,...   knock heads out: head H of layer L (both from 0) gives nothing\n"
            "                         to the residual stream (its output is zeroed before the\n"
            "                         projection), for sampling, --score and --attention alike\n"
            "      --ablate-mean L.H,...\n"
            "                         replace heads by their mean output over a reference text (the\n"
            "                         validation split of the checkpoint's run, or --mean-over's)\n"
            "                         instead of zeroing them, for sampling, --score, --score-task,\n"
            "                         --attention and --patch\n"
            "      --mean-over FILE   the reference text of --ablate-mean and of the pages' importance\n"
            "                         by the mean (default: the run's validation split, when its task\n"
            "                         or its one corpus file makes it)\n"
            "      --patch CLEAN CORRUPTED\n"
            "                         activation patching of two texts of the same length (at most\n"
            "                         block_size characters): the corrupted text run with each head's\n"
            "                         output, and the residual stream at each position, taken from\n"
            "                         the clean run; prints the share of logit(clean's answer) -\n"
            "                         logit(corrupted's) each restores; with --attention, the clean\n"
            "                         text recorded with the patching beside it\n"
            "      --threads N        OpenMP threads; 0 = all cores; at most %d per core (default %d)\n"
            "      --max-memory MIB   refuse a checkpoint whose generation needs more memory than MIB\n"
            "                         mebibytes, and a --score text that would take more beside the\n"
            "                         model, at 4 bytes a character (a .gz stops being inflated once\n"
            "                         past it); default: the memory available now, less a margin\n"
            "                         kept free (the least of MemAvailable, the cgroup's limit less\n"
            "                         its use and RLIMIT_AS on Linux; free and inactive pages on\n"
            "                         macOS; elsewhere unknown: no limit)\n"
            "      --precision P      fp32, or bf16: matrix products on bf16 weights and activations\n"
            "                         with fp32 sums, faster where the CPU has AVX512_BF16 (default\n"
            "                         fp32, whatever the checkpoint was trained in)\n"
            "      --circuits FILE    write the circuits of the checkpoint's weights, no text: each head's\n"
            "                         OV circuit and its copying score, its QK circuits over positions and\n"
            "                         characters, and the Q-, K- and V-composition between heads beside\n"
            "                         a random baseline (drawn from --seed), to FILE (.json, or .html: a\n"
            "                         page that draws them), and a summary; no prompt\n"
            "      --timeline RUN_DIR rebuild RUN_DIR/timeline.html, the page of a training run, from its\n"
            "                         probe.bin and log.csv (a run copied from elsewhere), which must\n"
            "                         be of one run, while no run holds RUN_DIR; no CKPT; --max-memory\n"
            "                         bounds it too\n"
            "      --csv FILE         with --timeline: write every head's scores and importance at every\n"
            "                         probed step of RUN_DIR/probe.bin to FILE as CSV, not the page\n"
            "      --export FILE      write the model for other programs, no text: FILE.gguf for\n"
            "                         llama.cpp (architecture gpt2, or gptneox for RoPE; one token a\n"
            "                         character) or FILE.onnx for ONNX runtimes (opset %d: input_ids\n"
            "                         [batch, sequence] -> logits [batch, sequence, vocabulary]); may be\n"
            "                         given up to %d times; takes only --force and --max-memory\n"
            "      --force            replace files that are there already (--attention, --surprisal,\n"
            "                         --logits, --export, --timeline's page); without it they are refused\n"
            "  -h, --help             show this help\n"
            "An empty prompt starts from a newline (if the vocabulary has one). A prompt file may hold\n"
            "at most %d bytes.\n",
            program_invocation(), program_invocation(), program_invocation(), d->max_new, d->sampler.temperature,
            d->sampler.top_k, d->sampler.top_p, d->seed, d->num_samples, d->stride, MAX_ATTENTION_FILES,
            THREADS_PER_CORE, d->threads, ONNX_OPSET, MAX_EXPORT_FILES, PROMPT_MAX_BYTES);
}

// Options that only generating text uses (--score refuses them).
static int is_sampling_option(int c) {
    switch (c) {
        case 'n': case 't': case 'k': case 'p': case 's': case 'f':
        case GEN_OPT_NUM_SAMPLES: case GEN_OPT_ATTENTION: case GEN_OPT_LOGITS: return 1;
        default: return 0;
    }
}

const struct option generate_long_options[] = {
    {"max-new", required_argument, 0, 'n'},     {"temperature", required_argument, 0, 't'},
    {"top-k", required_argument, 0, 'k'},       {"top-p", required_argument, 0, 'p'},
    {"seed", required_argument, 0, 's'},        {"prompt-file", required_argument, 0, 'f'},
    {"no-cache", no_argument, 0, GEN_OPT_NO_CACHE}, {"attention", required_argument, 0, GEN_OPT_ATTENTION},
    {"threads", required_argument, 0, GEN_OPT_THREADS}, {"skip-unknown", no_argument, 0, GEN_OPT_SKIP_UNKNOWN},
    {"max-memory", required_argument, 0, GEN_OPT_MAX_MEMORY}, {"stride", required_argument, 0, GEN_OPT_STRIDE},
    {"num-samples", required_argument, 0, GEN_OPT_NUM_SAMPLES}, {"score", required_argument, 0, GEN_OPT_SCORE},
    {"surprisal", required_argument, 0, GEN_OPT_SURPRISAL}, {"precision", required_argument, 0, GEN_OPT_PRECISION},
    {"encoding", required_argument, 0, GEN_OPT_ENCODING},
    {"timeline", required_argument, 0, GEN_OPT_TIMELINE}, {"force", no_argument, 0, GEN_OPT_FORCE},
    {"ablate", required_argument, 0, GEN_OPT_ABLATE},
    {"score-task", no_argument, 0, GEN_OPT_SCORE_TASK}, {"rows", required_argument, 0, GEN_OPT_ROWS},
    {"csv", required_argument, 0, GEN_OPT_CSV}, {"circuits", required_argument, 0, GEN_OPT_CIRCUITS},
    {"ablate-mean", required_argument, 0, GEN_OPT_ABLATE_MEAN}, {"mean-over", required_argument, 0, GEN_OPT_MEAN_OVER},
    {"patch", required_argument, 0, GEN_OPT_PATCH},
    {"export", required_argument, 0, GEN_OPT_EXPORT}, {"logits", required_argument, 0, GEN_OPT_LOGITS},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

void generate_options_note(GenerateOptions *o, int c, const char *name) {
    if (!o->sampling_flag[0] && is_sampling_option(c))
        snprintf(o->sampling_flag, sizeof(o->sampling_flag), "%s", name);
    if (!o->decoding_flag[0] && is_sampling_option(c) && c != GEN_OPT_ATTENTION)
        snprintf(o->decoding_flag, sizeof(o->decoding_flag), "%s", name);
    if (!o->other_flag[0] && c != GEN_OPT_TIMELINE && c != GEN_OPT_CSV && c != GEN_OPT_EXPORT && c != GEN_OPT_FORCE &&
        c != GEN_OPT_MAX_MEMORY &&
        c != 'h' && c != ':' && c != '?')
        snprintf(o->other_flag, sizeof(o->other_flag), "%s", name);
    if (!o->circuits_other[0] && c != GEN_OPT_CIRCUITS && c != 's' && c != GEN_OPT_THREADS &&
        c != GEN_OPT_MAX_MEMORY && c != GEN_OPT_FORCE && c != 'h' && c != ':' && c != '?')
        snprintf(o->circuits_other, sizeof(o->circuits_other), "%s", name);
}

int generate_options_check(const GenerateOptions *o, char err[ERR_LEN]) {
    if (o->prompt && o->prompt_file) return error_status(err, EXIT_USAGE, "give a prompt or --prompt-file, not both");
    if (o->surprisal && !o->score)
        return error_status(err, EXIT_USAGE, "--surprisal writes what --score computes: give --score FILE too");
    if (o->score && o->prompt)
        return error_status(err, EXIT_USAGE, "--score reads its text from FILE: give no prompt ('%s')", o->prompt);
    if (o->encoding_given && !o->score)
        return error_status(err, EXIT_USAGE, "--encoding is --score's text's: give --score FILE too");
    if (o->rows && !o->score_task) return error_status(err, EXIT_USAGE, "--rows is --score-task's: give --score-task too");
    if (o->score_task && (o->score || o->prompt || o->sampling_flag[0] || o->surprisal || o->stride != 1 ||
                          !o->use_cache))
        return error_status(err, EXIT_USAGE, "--score-task scores the task's own rows, one window each: it takes only "
                            "--rows, --ablate, --ablate-mean, --mean-over, --threads, --precision and --max-memory");
    if (o->score && o->sampling_flag[0])
        return error_status(err, EXIT_USAGE, "%s is for generating text; --score only takes --stride, --skip-unknown, "
                            "--surprisal, --encoding, --no-cache, --ablate, --ablate-mean, --mean-over, --threads, "
                            "--precision and --max-memory", o->sampling_flag);
    if (o->circuits && (o->circuits_other[0] || o->prompt))
        return error_status(err, EXIT_USAGE, "--circuits reads the weights alone: it takes only --seed, --threads, "
                            "--max-memory and --force, not %s%s%s", o->prompt ? "a prompt ('" : o->circuits_other,
                            o->prompt ? o->prompt : "", o->prompt ? "')" : "");
    if (o->patch && !o->prompt)
        return error_status(err, EXIT_USAGE, "--patch needs two texts of the same length: --patch CLEAN CORRUPTED (the "
                            "corrupted one after the clean one)");
    if (o->patch && (o->decoding_flag[0] || o->score || o->circuits || o->score_task))
        return error_status(err, EXIT_USAGE, "--patch runs two texts through the model and generates nothing: it takes "
                            "--attention, --ablate, --ablate-mean, --mean-over, --skip-unknown, --threads, --precision, "
                            "--max-memory and --force, not %s", o->decoding_flag[0] ? o->decoding_flag
                            : o->score ? "--score" : o->circuits ? "--circuits" : "--score-task");
    if (o->mean_over && !o->ablate_mean && !o->num_attention)
        return error_status(err, EXIT_USAGE, "--mean-over gives the text --ablate-mean and the pages' importance take "
                            "the heads' means over: give --ablate-mean L.H or --attention FILE too");
    if (o->num_samples > 1 && (o->num_attention || o->logits))
        return error_status(err, EXIT_USAGE, "%s records one text: it cannot be combined with --num-samples %d",
                            o->num_attention ? "--attention" : "--logits", o->num_samples);
    for (int i = 0; i < o->num_attention; i++)
        if (attention_check_path(o->attention[i], err) != 0) return EXIT_USAGE;
    if (o->circuits && circuits_check_path(o->circuits, err) != 0) return EXIT_USAGE;
    if (o->logits && logits_check_path(o->logits, err) != 0) return EXIT_USAGE;
    ExportFormat format;
    for (int i = 0; i < o->num_exports; i++)
        if (export_format(o->exports[i], &format, err) != 0) return EXIT_USAGE;
    if (o->num_exports && (o->other_flag[0] || o->prompt))
        return error_status(err, EXIT_USAGE, "--export writes the checkpoint's model: it takes only --force and "
                            "--max-memory, not '%s'", o->other_flag[0] ? o->other_flag : o->prompt);
    return 0;
}
