#!/usr/bin/python3
"""Checks a file of `./generate CKPT --export MODEL.onnx` with ONNX's own checker (Debian's
python3-onnx): onnx.checker.check_model with full_check (the graph's types and shapes
inferred), and that its metadata says what the checkpoint's does: the vocabulary (a JSON array
of code points), its unknown token, the block size and the positions.

usage: /usr/bin/python3 scripts/export_check/check_onnx_model.py MODEL.onnx CKPT
Exit status: 0 the same, 1 a difference or a checker's error (said on stderr), 2 bad usage.
"""
import json
import struct
import sys

import onnx


def checkpoint_metadata(path):
    with open(path, "rb") as f:
        header_len = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(header_len))["__metadata__"]


def main():
    if len(sys.argv) != 3:
        print("usage: check_onnx_model.py MODEL.onnx CKPT", file=sys.stderr)
        return 2
    model_path, checkpoint = sys.argv[1:]
    model = onnx.load(model_path)
    try:
        onnx.checker.check_model(model, full_check=True)
    except onnx.checker.ValidationError as e:
        print(f"check_onnx_model: {model_path}: onnx.checker: {e}", file=sys.stderr)
        return 1
    ckpt = checkpoint_metadata(checkpoint)
    meta = {p.key: p.value for p in model.metadata_props}
    want = {"vocab": json.dumps(json.loads(ckpt["vocab"]), separators=(",", ":")),
            "block_size": ckpt["block_size"],
            "position_encoding": ckpt.get("position_encoding", "learned")}
    if "vocab_unknown" in ckpt:
        want["vocab_unknown"] = ckpt["vocab_unknown"]
    for key, value in want.items():
        if meta.get(key) != value:
            print(f"check_onnx_model: {model_path}: metadata {key} = {meta.get(key)!r}, the checkpoint's is "
                  f"{value!r}", file=sys.stderr)
            return 1
    opsets = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    print(f"{model_path}: onnx {onnx.__version__} checker (full_check): valid; IR version {model.ir_version}, opsets "
          f"{opsets}, {len(model.graph.node)} nodes, {len(model.graph.initializer)} initializers; metadata "
          f"{', '.join(sorted(meta))} as the checkpoint's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
