#!/bin/sh
# Puts zlib's source, from Debian's source package, in DIR (default build-wasm/zlib): the
# WebAssembly build (web/web.mk) compiles it with emcc, since no zlib for WebAssembly is
# packaged (emscripten's own port downloads its source from zlib.net when first used).
#
# apt-get source, with an apt configuration of its own (deb-src lines for Debian's archive,
# its lists and cache under DIR), so that nothing of the system's apt is changed and no
# deb-src line need be in its sources: the package's files are checked by apt against the
# archive's signed Sources index, then the tarball against the SHA-256 below, so that the
# build is the same everywhere (web/chargpt.html is committed and CI rebuilds it). When
# Debian's archive no longer has this version (a point release replaced it), the same from
# snapshot.debian.org. Needs apt-get (and Debian's archive keyring), tar and bzip2.
set -eu
dir=${1:-build-wasm/zlib}
version=1:1.2.13.dfsg-1
tarball=zlib_1.2.13.dfsg.orig.tar.bz2
sha256=71feb7947e3c00ef125f83b79a4e529bde31171e5babe48b391f06758d1ab0a1
src=$dir/zlib-1.2.13.dfsg

if [ -f "$src/zlib.h" ]; then exit 0; fi
mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/download"
apt_dir=$(cd "$dir/apt" && pwd)

fetch() {  # fetch ARCHIVE_URL: apt-get source of the pinned version from that archive
    printf 'deb-src [check-valid-until=no] %s bookworm main\n' "$1" > "$apt_dir/sources.list"
    set -- -o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache" \
        -o APT::Sandbox::User=root -o Acquire::Check-Valid-Until=false
    apt-get -qq "$@" update && (cd "$dir/download" && apt-get -qq "$@" source --download-only "zlib=$version")
}
if ! fetch http://deb.debian.org/debian; then
    echo "zlib $version is not in deb.debian.org's bookworm: trying snapshot.debian.org" >&2
    fetch http://snapshot.debian.org/archive/debian/20250520T000000Z || {
        echo "cannot fetch Debian's source package of zlib $version (see above)" >&2
        exit 1
    }
fi
echo "$sha256  $dir/download/$tarball" | sha256sum -c --quiet - || {
    echo "$dir/download/$tarball is not the tarball this build was made with" >&2
    exit 1
}
tar -xjf "$dir/download/$tarball" -C "$dir"
test -f "$src/zlib.h"
