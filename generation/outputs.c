#include "outputs.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/platform.h"
#include "../format/output.h"

int refuse_existing(const char *flag, const char *path, int force, char err[ERR_LEN]) {
    struct stat st;
    if (!force && stat(path, &st) == 0 && S_ISREG(st.st_mode))
        return error_status(err, EXIT_USAGE, "%s %s exists: give --force to replace it", flag, path);
    return 0;
}

// 1 when the output paths a and b, whose directories exist, name the same file: the same
// name in the same directory (links to it resolved).
static int same_output(const char *a, const char *b) {
    char dirs[2][4200], real[2][4200];
    const char *names[2], *paths[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        const char *slash = platform_path_last_separator(paths[i]);
        names[i] = slash ? slash + 1 : paths[i];
        snprintf(dirs[i], sizeof(dirs[i]), "%.*s", slash ? (int)(slash - paths[i]) + 1 : 1, slash ? paths[i] : ".");
        if (platform_real_path(dirs[i], real[i], sizeof(real[i])) != 0) return strcmp(a, b) == 0;
    }
    return strcmp(real[0], real[1]) == 0 && strcmp(names[0], names[1]) == 0;
}

int prepare_outputs(const GenerateOptions *o, char err[ERR_LEN]) {
    const char *paths[MAX_ATTENTION_FILES + MAX_EXPORT_FILES + 3], *flags[MAX_ATTENTION_FILES + MAX_EXPORT_FILES + 3];
    int n = 0, removed = 0;
    for (int i = 0; i < o->num_attention; i++) paths[n] = o->attention[i], flags[n++] = "--attention";
    if (o->surprisal) paths[n] = o->surprisal, flags[n++] = "--surprisal";
    if (o->circuits) paths[n] = o->circuits, flags[n++] = "--circuits";
    if (o->logits) paths[n] = o->logits, flags[n++] = "--logits";
    for (int i = 0; i < o->num_exports; i++) paths[n] = o->exports[i], flags[n++] = "--export";
    for (int i = 0; i < n; i++)
        if (refuse_existing(flags[i], paths[i], o->force, err) != 0) return EXIT_USAGE;
    char why[ERR_LEN];
    for (int i = 0; i < n; i++) {
        int k;
        if (output_prepare(paths[i], &k, why) != 0) return error_status(err, EXIT_DATA, "%s %s", flags[i], why);
        removed += k;
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (same_output(paths[i], paths[j]))
                return error_status(err, EXIT_USAGE, "%s %s and %s %s are the same file: give each file once", flags[i],
                                    paths[i], flags[j], paths[j]);
    if (removed > 0)
        fprintf(stderr, "%s: removed %d temporary file%s left beside the outputs by a run that was stopped\n",
                program_name(), removed, removed == 1 ? "" : "s");
    return 0;
}
