#!/bin/sh
# Runs a program of the Windows build (`make windows`: build-windows/) under Debian's wine64:
# scripts/wine_windows.sh build-windows/bin/train.exe --steps 10 ... Wine keeps its files in
# build-windows/wine (WINEPREFIX, made on the first run: some 20 s); it installs no Mono or Gecko
# there (WINEDLLOVERRIDES) and prints none of its own messages (WINEDEBUG).
root=$(cd "$(dirname "$0")/.." && pwd)
WINE=${WINE:-$(command -v wine64 || echo /usr/lib/wine/wine64)}
export WINEPREFIX="$root/build-windows/wine" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
mkdir -p "$WINEPREFIX"
exec "$WINE" "$@"
