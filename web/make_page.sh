#!/bin/sh
# Makes the page, web/chargpt.html: the template (web/page.html) with its marks replaced, each
# on a line of its own, by the page's script (@PAGE@), the worker's (@WORKER@: emscripten's
# glue, then web/worker.js), the module (@WASM@, base64) and the corpus ./train ships with
# (@CORPUS@, data/tinyshakespeare.txt.gz in base64). The same inputs give the same
# bytes (CI compares the committed page with a fresh `make web`). Refused: a script holding
# "</script" (it would end its element early) and a page larger than 2 MiB.
# usage: web/make_page.sh OUT TEMPLATE PAGE.js GLUE.js WORKER.js MODULE.wasm CORPUS.gz
set -eu
out=$1 template=$2 page=$3 glue=$4 worker=$5 wasm=$6 corpus=$7
for f in "$page" "$glue" "$worker"; do
    if grep -qi '</script' "$f"; then
        echo "$f holds '</script', which would end the page's <script> element" >&2
        exit 1
    fi
done
base64 -w 0 "$wasm" > "$out.wasm64"
base64 -w 0 "$corpus" > "$out.corpus64"
awk -v page="$page" -v glue="$glue" -v worker="$worker" -v wasm="$out.wasm64" -v corpus="$out.corpus64" '
    function put(file,   line) { while ((getline line < file) > 0) print line; close(file) }
    function mark(line, name, files,   at, n, parts, i) {
        at = index(line, "@" name "@")
        printf "%s", substr(line, 1, at - 1)
        n = split(files, parts, " ")
        for (i = 1; i <= n; i++) { if (name == "WASM" || name == "CORPUS") { getline l < parts[i]; printf "%s", l; close(parts[i]) } else put(parts[i]) }
        print substr(line, at + length(name) + 2)
    }
    index($0, "@PAGE@") { mark($0, "PAGE", page); next }
    index($0, "@WORKER@") { mark($0, "WORKER", glue " " worker); next }
    index($0, "@WASM@") { mark($0, "WASM", wasm); next }
    index($0, "@CORPUS@") { mark($0, "CORPUS", corpus); next }
    { print }
' "$template" > "$out.tmp"
rm -f "$out.wasm64" "$out.corpus64"
size=$(wc -c < "$out.tmp")
if [ "$size" -gt 2097152 ]; then
    echo "$out would be $size bytes, more than the 2 MiB a page may be" >&2
    rm -f "$out.tmp"
    exit 1
fi
mv "$out.tmp" "$out"
echo "$out: $size bytes"
