#!/usr/bin/python3
"""OpenBLAS peer of `scripts/bench --jobs products`: its sgemm on the shapes that job printed.

OpenBLAS is the library behind the fp32 matrix products of Debian's PyTorch (BLAS_INFO=generic,
libblas.so.3), so this says how fast the peer of `make bench` multiplies the very matrices
chargpt's products job times. It reads that job's output (its "products" lines: config, layer,
N rows, C inputs, OC outputs; a layer met again in a later round is timed once) and for each
layer times
    forward:  out (N, OC) = inp (N, C) @ weight (OC, C)^T
    backward: dinp (N, C) = dout (N, OC) @ weight,  dweight (OC, C) += dout^T @ inp
(the biases' sums are left out: a few adds per output): the median call of calls repeated for
--seconds, after one untimed call. Set OPENBLAS_CORETYPE to hold OpenBLAS to the instruction
set of chargpt's kernels (scripts/bench.sh's mapping: SkylakeX for avx512, Haswell for avx2).
Output: one line per layer, "blas_products key=value ...", the keys of the products job's.

Usage:
    ./scripts/bench --jobs products --config lesson > products.txt
    OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 scripts/bench_blas.py products.txt [--threads 2]
"""
import argparse
import ctypes
import os
import signal
import statistics
import sys
import time

signal.signal(signal.SIGINT, signal.SIG_DFL)
if hasattr(signal, "SIGPIPE"):  # output piped into head: stop quietly, as a C program would
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)

import numpy as np

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112


def load_openblas(threads):
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
    except OSError as e:
        sys.exit(f"bench_blas.py: OpenBLAS is not there ({e}): apt-get install libopenblas0-pthread")
    i, f, p = ctypes.c_int, ctypes.c_float, ctypes.c_void_p
    lib.cblas_sgemm.argtypes = [i, i, i, i, i, i, f, p, i, p, i, f, p, i]
    lib.openblas_set_num_threads.argtypes = [i]
    lib.openblas_set_num_threads(threads)
    return lib


def median_seconds(call, seconds):
    call()
    times, start = [], time.perf_counter()
    while not times or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def layer_products(lib, N, C, OC, seconds):
    rng = np.random.default_rng(1337)
    inp, weight, dout = (rng.random(shape, dtype=np.float32) - 0.5 for shape in ((N, C), (OC, C), (N, OC)))
    out, dinp, dweight = np.zeros((N, OC), np.float32), np.zeros((N, C), np.float32), np.zeros((OC, C), np.float32)

    def sgemm(ta, tb, M, Nn, K, a, lda, b, ldb, beta, c, ldc):
        lib.cblas_sgemm(ROW_MAJOR, ta, tb, M, Nn, K, 1.0, a.ctypes.data, lda, b.ctypes.data, ldb, beta,
                        c.ctypes.data, ldc)

    def forward():
        sgemm(NO_TRANS, TRANS, N, OC, C, inp, C, weight, C, 0.0, out, OC)

    def backward():
        sgemm(NO_TRANS, NO_TRANS, N, C, OC, dout, OC, weight, C, 0.0, dinp, C)
        sgemm(TRANS, NO_TRANS, OC, C, N, dout, OC, inp, C, 1.0, dweight, C)

    fwd, bwd = median_seconds(forward, seconds), median_seconds(backward, seconds)
    flops = 2.0 * N * C * OC
    return (f"N={N} C={C} OC={OC} forward_ms={1e3 * fwd:.4f} backward_ms={1e3 * bwd:.4f} "
            f"forward_gflops={flops / fwd / 1e9:.2f} backward_gflops={2 * flops / bwd / 1e9:.2f}")


MAX_FILE_CHARS = 1 << 20  # the products job prints a few hundred characters a layer
MAX_OPERAND_BYTES = 1 << 30  # a layer's six operands (inputs, outputs, gradients), as float32


def read_shapes(path):
    """(config, layer, N, C, OC) of each products line of the products job's output, once each."""
    shapes, seen = [], set()
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(MAX_FILE_CHARS + 1)
    except OSError as e:
        sys.exit(f"bench_blas.py: cannot read {path}: {e.strerror}")
    if len(text) > MAX_FILE_CHARS:
        sys.exit(f"bench_blas.py: {path} is longer than the products job's output can be "
                 f"({MAX_FILE_CHARS >> 20} MiB read)")
    for line in text.splitlines():
        words = line.split()
        if not words or words[0] != "products":
            continue
        kv = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        try:
            shape = (kv["config"], kv["layer"], int(kv["N"]), int(kv["C"]), int(kv["OC"]))
        except (KeyError, ValueError):
            sys.exit(f"bench_blas.py: {path}: a products line without config, layer, N, C and OC: "
                     f"{ascii(line.strip()[:120])}")
        N, C, OC = shape[2:]
        if min(N, C, OC) < 1 or 4 * 2 * (N * C + OC * C + N * OC) > MAX_OPERAND_BYTES:
            sys.exit(f"bench_blas.py: {path}: a layer of {N} x {C} x {OC} is not one to time "
                     f"(each size from 1, its operands at most {MAX_OPERAND_BYTES >> 20} MiB): "
                     f"{ascii(line.strip()[:120])}")
        if shape[:2] not in seen:
            seen.add(shape[:2])
            shapes.append(shape)
    if not shapes:
        sys.exit(f"bench_blas.py: {path} has no products lines (the output of scripts/bench --jobs products)")
    return shapes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("products", help="the output of scripts/bench --jobs products, whose shapes are timed")
    ap.add_argument("--threads", type=int, default=2, help="OpenBLAS threads (default 2)")
    ap.add_argument("--seconds", type=float, default=1.0, help="time each product this long (default 1)")
    args = ap.parse_args()
    if args.threads < 1 or not args.seconds > 0:
        ap.error("--threads and --seconds must be positive")
    shapes = read_shapes(args.products)
    lib = load_openblas(args.threads)
    coretype = os.environ.get("OPENBLAS_CORETYPE", "its own choice")
    for name, layer, N, C, OC in shapes:
        line = layer_products(lib, N, C, OC, args.seconds)
        print(f"blas_products config={name} threads={args.threads} coretype={coretype.replace(' ', '_')} "
              f"layer={layer} {line}", flush=True)


if __name__ == "__main__":
    main()
