#include "run_checkpoint.h"

#include "../dist/dist.h"
#include "../format/checkpoint.h"

int run_checkpoint_save(const char *const paths[2], DataParallel *dp, GPT *model, const AdamW *opt,
                        const Vocab *vocab, const TrainOptions *o, const TrainState *s, char err[ERR_LEN]) {
    static RunMeta meta;  // 44 KB of text: not on the stack
    AdamW copy;
    const AdamW *full;
    if (data_parallel_gather_optimizer(dp, model, opt, &copy, &full, err) != 0) return EXIT_USAGE;
    run_meta_write(&meta, o, s);
    int status = 0;
    for (int i = 0; i < 2 && dist_rank() == 0 && status == 0; i++)
        if (paths[i] && checkpoint_save(paths[i], model, vocab, full, meta.entries, meta.count, err) != 0)
            status = EXIT_DATA;
    data_parallel_release_optimizer(dp);
    return status;
}
