#!/usr/bin/python3
"""Loads a chargpt checkpoint into a plain PyTorch GPT and prints its greedy continuation.

The checkpoint is read with nothing but json, struct and torch: its metadata gives the
config and the vocabulary, its tensors (nanoGPT's names) go into a nanoGPT-style module with
load_state_dict(strict=True), the AdamW moments (optimizer.*) are skipped, and the output
head is tied to the token embedding. With the same prompt, the text printed equals
`./generate CKPT PROMPT -n N -t 0`. Once the text is longer than block_size, the model sees
its last block_size characters (nanoGPT's policy).

usage:
    /usr/bin/python3 scripts/load_in_torch.py CKPT [PROMPT] [-n N]
    /usr/bin/python3 scripts/load_in_torch.py out/ckpt.safetensors "ROMEO:" -n 60
    /usr/bin/python3 scripts/load_in_torch.py out/ckpt.safetensors -n 20 -- "-hi"

A checkpoint of `./train --pos rope` (metadata position_encoding "rope") is refused, exit 1.

Exit status: 0 done, 1 unreadable or unsupported checkpoint, 2 bad usage or prompt.
"""
import argparse
import json
import math
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

FORMATS = ("chargpt-1", "chargpt-2")
LAYERNORM_EPS = 1e-5
CONFIG_KEYS = ("vocab_size", "block_size", "n_layer", "n_head", "n_embd", "head_size", "qkv_bias")
PROGRAM = "load_in_torch.py"


class CheckpointError(Exception):
    pass


def read_checkpoint(path):
    """(metadata, tensors) of a chargpt safetensors file, without the optimizer.* tensors.
    The CRC-32 in the metadata is not checked here."""
    try:
        with open(path, "rb") as f:
            raw = bytearray(f.read())
    except OSError as e:
        raise CheckpointError(f"cannot read {path}: {e.strerror}")
    if len(raw) < 8:
        raise CheckpointError(f"{path}: not a safetensors file (shorter than 8 bytes)")
    header_len = struct.unpack("<Q", raw[:8])[0]
    if 8 + header_len > len(raw):
        raise CheckpointError(f"{path}: truncated (header of {header_len} bytes, file of {len(raw)})")
    try:
        header = json.loads(raw[8:8 + header_len])
    except ValueError as e:
        raise CheckpointError(f"{path}: the safetensors header is not JSON: {e}")
    meta = header.pop("__metadata__", {})
    if meta.get("format") not in FORMATS:
        raise CheckpointError(f"{path}: checkpoint format {meta.get('format')!r} is not one of "
                              f"{', '.join(FORMATS)}")
    data = memoryview(raw)[8 + header_len:]
    tensors = {}
    for name, info in header.items():
        if name.startswith("optimizer."):
            continue
        begin, end = info["data_offsets"]
        count = math.prod(info["shape"])
        if info["dtype"] != "F32" or end - begin != 4 * count or end > len(data):
            raise CheckpointError(f"{path}: tensor {name} is not F32 of shape {info['shape']} "
                                  f"inside the file")
        values = torch.frombuffer(data[begin:end], dtype=torch.float32) if count else torch.empty(0)
        tensors[name] = values.reshape(info["shape"])
    return meta, tensors


def config_from_meta(meta, path):
    try:
        config = {key: int(meta[key]) for key in CONFIG_KEYS}
        vocab = json.loads(meta["vocab"])
    except (KeyError, ValueError) as e:
        raise CheckpointError(f"{path}: checkpoint metadata is missing or invalid: {e}")
    position = meta.get("position_encoding", "learned")  # absent before RoPE: learned
    if position != "learned":
        raise CheckpointError(f"{path}: position_encoding {position!r}: this script loads nanoGPT's "
                              "learned positions (transformer.wpe) only, not a --pos rope checkpoint, "
                              "whose ./generate rolls its cache past the block")
    if len(vocab) != config["vocab_size"]:
        raise CheckpointError(f"{path}: {len(vocab)} characters in the vocabulary, vocab_size "
                              f"{config['vocab_size']}")
    return config, [chr(cp) for cp in vocab]


# ----------------------------------------------------------------------------------------
# the model: GPT-2 style, pre-LayerNorm, tanh GELU, head tied to the token embedding

class CausalSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_head, self.head_size = c["n_head"], c["head_size"]
        width = c["n_head"] * c["head_size"]  # heads side by side; need not equal n_embd
        self.c_attn = nn.Linear(c["n_embd"], 3 * width, bias=bool(c["qkv_bias"]))
        self.c_proj = nn.Linear(width, c["n_embd"])

    def forward(self, x):  # (B, t, C) -> (B, t, C)
        B, t, _ = x.shape
        H, hs = self.n_head, self.head_size
        q, k, v = self.c_attn(x).split(H * hs, dim=-1)
        q, k, v = (z.view(B, t, H, hs).transpose(1, 2) for z in (q, k, v))  # (B, H, t, hs)
        scores = q @ k.transpose(-2, -1) / math.sqrt(hs)  # (B, H, t, t)
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        att = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, t, H * hs)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c["n_embd"], 4 * c["n_embd"])
        self.c_proj = nn.Linear(4 * c["n_embd"], c["n_embd"])

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c["n_embd"], eps=LAYERNORM_EPS)
        self.attn = CausalSelfAttention(c)
        self.ln_2 = nn.LayerNorm(c["n_embd"], eps=LAYERNORM_EPS)
        self.mlp = MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.block_size = c["block_size"]
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(c["vocab_size"], c["n_embd"]),
            wpe=nn.Embedding(c["block_size"], c["n_embd"]),
            h=nn.ModuleList(Block(c) for _ in range(c["n_layer"])),
            ln_f=nn.LayerNorm(c["n_embd"], eps=LAYERNORM_EPS),
        ))
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied, as in nanoGPT

    def forward(self, idx):  # (B, t) token ids -> (B, t, V) logits
        pos = torch.arange(idx.shape[1])
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))

    @torch.no_grad()
    def generate_greedy(self, idx, max_new):
        """Appends max_new argmax tokens to idx (1, t); the model sees the last block_size."""
        for _ in range(max_new):
            logits = self(idx[:, -self.block_size:])
            idx = torch.cat([idx, logits[:, -1, :].argmax(dim=-1, keepdim=True)], dim=1)
        return idx


def load_gpt(path):
    meta, tensors = read_checkpoint(path)
    config, chars = config_from_meta(meta, path)
    model = GPT(config)
    if "transformer.wte.weight" in tensors:
        tensors["lm_head.weight"] = tensors["transformer.wte.weight"]  # tied: stored once
    try:
        model.load_state_dict(tensors, strict=True)
    except (RuntimeError, TypeError) as e:
        raise CheckpointError(f"{path}: the tensors do not fit the config: {e}")
    model.eval()
    return model, config, chars, meta["format"]


def main():
    parser = argparse.ArgumentParser(
        prog=PROGRAM, description="Load a chargpt checkpoint into a plain PyTorch GPT and print "
        "its greedy text for a prompt (the same text as ./generate CKPT PROMPT -n N -t 0).")
    parser.add_argument("checkpoint", metavar="CKPT")
    parser.add_argument("prompt", metavar="PROMPT", nargs="?", default="",
                        help="text to continue (default: start from a newline)")
    parser.add_argument("-n", "--max-new", type=int, default=500, metavar="N",
                        help="characters to generate (default 500)")
    args = parser.parse_intermixed_args()
    if args.max_new < 0:
        parser.error(f"-n must be 0 or more, got {args.max_new}")
    try:
        model, config, chars, fmt = load_gpt(args.checkpoint)
    except CheckpointError as e:
        print(f"{PROGRAM}: {e}", file=sys.stderr)
        return 1
    index = {ch: i for i, ch in enumerate(chars)}
    for pos, ch in enumerate(args.prompt):
        if ch not in index:
            print(f"{PROGRAM}: prompt character {ch!r} (U+{ord(ch):04X}) at position {pos} is not "
                  f"in the checkpoint's vocabulary", file=sys.stderr)
            return 2
    print(f"{args.checkpoint}: {fmt}, {config['n_layer']} layers, {config['n_head']} heads of "
          f"{config['head_size']}, n_embd {config['n_embd']}, block {config['block_size']}, "
          f"vocabulary {config['vocab_size']}, "
          f"{sum(p.numel() for p in model.parameters())} parameters", file=sys.stderr)
    if not args.prompt and args.max_new == 0:
        return 0
    # like ./generate, an empty prompt starts from a newline (or token 0), not printed
    ids = [index[ch] for ch in args.prompt] or [index.get("\n", 0)]
    out = model.generate_greedy(torch.tensor([ids]), args.max_new)[0].tolist()
    text = args.prompt + "".join(chars[i] for i in out[len(ids):])
    sys.stdout.buffer.write((text + "\n").encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
