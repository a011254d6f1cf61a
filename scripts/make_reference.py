#!/usr/bin/python3
"""PyTorch reference for the C GPT: writes the fixtures that tests compare against.

A small nanoGPT-style GPT-2 (pre-LayerNorm, tied output head, tanh GELU, no dropout) is
defined here from torch primitives. Weights are drawn from a seeded generator, rounded to
float32, and everything is then computed in float64 from those float32 values: the logits
and mean cross-entropy of one batch, the gradient of that loss for every parameter, and the
weights after 3 AdamW steps (forward, backward, clip by global norm, update) on that batch.
The results are stored as float32 in safetensors files written by hand (json + struct).

Usage:
    /usr/bin/python3 scripts/make_reference.py            # writes tests/fixtures/*.safetensors
    /usr/bin/python3 scripts/make_reference.py --check    # sanity checks only, writes nothing
"""
import argparse
import hashlib
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

FORMAT = "chargpt-reference-1"
LAYERNORM_EPS = 1e-5
ADAMW_STEPS = 3
# Optimizer settings, kept as the decimal strings written into the metadata.
LR = "0.01"
BETA1 = "0.9"
BETA2 = "0.99"
EPS = "1e-8"
WEIGHT_DECAY = "0.1"
ROPE_BASE = 10000.0  # model/layers.h

# The two fixtures: model config, batch shape and the seed of their weights and tokens.
FIXTURES = [
    dict(file="reference.safetensors", seed=1234,
         vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=12, head_size=5,
         qkv_bias=1, batch_size=3, seq_len=7),
    dict(file="reference_nobias.safetensors", seed=5678,
         vocab_size=7, block_size=6, n_layer=1, n_head=3, n_embd=9, head_size=3,
         qkv_bias=0, batch_size=2, seq_len=6),
    # RoPE (./train --pos rope): no wpe, q and k turned; 3 pairs a head, A != C
    dict(file="reference_rope.safetensors", seed=9012,
         vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=10, head_size=6,
         qkv_bias=1, batch_size=2, seq_len=8, position_encoding="rope"),
]


def is_rope(cfg):
    return cfg.get("position_encoding") == "rope"


# ----------------------------------------------------------------------------------------
# parameters

def parameter_specs(cfg):
    """(name, shape, kind) of every parameter in nanoGPT's naming, in a fixed order.
    kind picks the initial distribution (see draw_parameters)."""
    V, T, C = cfg["vocab_size"], cfg["block_size"], cfg["n_embd"]
    A = cfg["n_head"] * cfg["head_size"]
    specs = [("transformer.wte.weight", (V, C), "embedding")]
    if not is_rope(cfg):
        specs.append(("transformer.wpe.weight", (T, C), "embedding"))
    for i in range(cfg["n_layer"]):
        h = f"transformer.h.{i}."
        specs += [(h + "ln_1.weight", (C,), "ln_weight"),
                  (h + "ln_1.bias", (C,), "bias"),
                  (h + "attn.c_attn.weight", (3 * A, C), "attn_linear")]
        if cfg["qkv_bias"]:
            specs.append((h + "attn.c_attn.bias", (3 * A,), "bias"))
        specs += [(h + "attn.c_proj.weight", (C, A), "linear"),
                  (h + "attn.c_proj.bias", (C,), "bias"),
                  (h + "ln_2.weight", (C,), "ln_weight"),
                  (h + "ln_2.bias", (C,), "bias"),
                  (h + "mlp.c_fc.weight", (4 * C, C), "linear"),
                  (h + "mlp.c_fc.bias", (4 * C,), "bias"),
                  (h + "mlp.c_proj.weight", (C, 4 * C), "linear"),
                  (h + "mlp.c_proj.bias", (C,), "bias")]
    specs += [("transformer.ln_f.weight", (C,), "ln_weight"),
              ("transformer.ln_f.bias", (C,), "bias")]
    return specs


def draw_parameters(cfg, gen):
    """Weights with scales large enough that every parameter moves the loss, rounded to
    float32 and returned as float64 so all later math starts from the stored values.
    Linear weights N(0, s/sqrt(fan_in)) with s = 1 for c_attn (so attention is far from
    uniform) and 0.5 elsewhere; biases N(0, 0.1); LayerNorm weights 1 + N(0, 0.1);
    embeddings N(0, 0.5)."""
    params = {}
    for name, shape, kind in parameter_specs(cfg):
        z = torch.randn(shape, generator=gen, dtype=torch.float64)
        if kind == "embedding":
            w = 0.5 * z
        elif kind == "attn_linear":
            w = z / math.sqrt(shape[1])
        elif kind == "linear":
            w = 0.5 * z / math.sqrt(shape[1])
        elif kind == "ln_weight":
            w = 1.0 + 0.1 * z
        else:
            w = 0.1 * z
        params[name] = w.to(torch.float32).to(torch.float64)
    return params


# ----------------------------------------------------------------------------------------
# the model

def rope(x):
    """Rotary position embedding of x (B, H, t, hs): the pair (x[2i], x[2i+1]) of position
    p turned by the angle p * ROPE_BASE^(-2i/hs)."""
    t, hs = x.shape[-2], x.shape[-1]
    angle = (torch.arange(t, dtype=torch.float64)[:, None]
             * ROPE_BASE ** (-torch.arange(0, hs, 2, dtype=torch.float64) / hs))  # (t, hs/2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).flatten(-2)


def queries_keys_values(x, p, h, cfg):
    """q, k, v (B, H, t, hs) of x (B, t, C): qkv = c_attn(x) is (B, t, 3A), q, k, v its
    three A-wide slices, head j using columns [j*hs, (j+1)*hs) of each; with RoPE, q and k
    turned."""
    B, t, _ = x.shape
    H, hs = cfg["n_head"], cfg["head_size"]
    A = H * hs
    qkv = F.linear(x, p[h + "attn.c_attn.weight"], p.get(h + "attn.c_attn.bias"))
    q, k, v = (u.view(B, t, H, hs).transpose(1, 2) for u in qkv.split(A, dim=-1))
    if is_rope(cfg):
        q, k = rope(q), rope(k)
    return q, k, v


def attention(x, p, h, cfg):
    """Causal multi-head self-attention. x (B, t, C) -> (B, t, C).
    Scores q.k / sqrt(hs), softmax over positions <= i."""
    B, t, _ = x.shape
    H, hs = cfg["n_head"], cfg["head_size"]
    A = H * hs
    q, k, v = queries_keys_values(x, p, h, cfg)
    scores = q @ k.transpose(-2, -1) / math.sqrt(hs)  # (B, H, t, t)
    causal = torch.ones(t, t, dtype=torch.bool).tril()
    att = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
    y = (att @ v).transpose(1, 2).reshape(B, t, A)  # heads side by side: (B, t, A)
    return F.linear(y, p[h + "attn.c_proj.weight"], p[h + "attn.c_proj.bias"])


def mlp(x, p, h):
    """c_proj(gelu_tanh(c_fc(x))): (B, t, C) -> (B, t, 4C) -> (B, t, C)."""
    x = F.linear(x, p[h + "mlp.c_fc.weight"], p[h + "mlp.c_fc.bias"])
    x = F.gelu(x, approximate="tanh")
    return F.linear(x, p[h + "mlp.c_proj.weight"], p[h + "mlp.c_proj.bias"])


def layernorm(x, p, prefix):
    C = x.shape[-1]
    return F.layer_norm(x, (C,), p[prefix + ".weight"], p[prefix + ".bias"], LAYERNORM_EPS)


def embed(p, tokens):
    """The tokens' embeddings (B, t, C), plus their positions' unless the model has no wpe."""
    x = p["transformer.wte.weight"][tokens]
    if "transformer.wpe.weight" in p:
        x = x + p["transformer.wpe.weight"][:tokens.shape[1]]
    return x


def forward(p, cfg, tokens):
    """Logits (B, t, V) for tokens (B, t): pre-LayerNorm blocks, head tied to wte."""
    wte = p["transformer.wte.weight"]
    x = embed(p, tokens)
    for i in range(cfg["n_layer"]):
        h = f"transformer.h.{i}."
        x = x + attention(layernorm(x, p, h + "ln_1"), p, h, cfg)
        x = x + mlp(layernorm(x, p, h + "ln_2"), p, h)
    x = layernorm(x, p, "transformer.ln_f")
    return x @ wte.t()


def mean_loss(logits, targets):
    """Cross-entropy averaged over all B*t positions."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


# ----------------------------------------------------------------------------------------
# the reference computation

def choose_grad_clip(norm):
    """A quarter of the first gradient norm, rounded to a multiple of 1/64 (exact in
    float32 and in decimal), so clipping engages on every step."""
    clip = round(0.25 * norm * 64) / 64
    if clip <= 0:
        sys.exit(f"gradient norm {norm} too small to choose a clipping threshold")
    return clip


def compute_reference(cfg, params, tokens, targets, dtype, grad_clip=None):
    """Runs the reference in `dtype` from the given (float32-valued) weights.
    Returns a dict of results; grad_clip None chooses it from the first gradient norm."""
    p = {n: w.to(dtype).clone().requires_grad_(True) for n, w in params.items()}
    names = list(p)

    logits = forward(p, cfg, tokens)
    loss = mean_loss(logits, targets)
    loss.backward()
    grads = {n: p[n].grad.detach().clone() for n in names}
    if grad_clip is None:
        first_norm = math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads.values()))
        grad_clip = choose_grad_clip(first_norm)

    # weight decay on matrices and embeddings only
    decay = [p[n] for n in names if p[n].dim() >= 2]
    no_decay = [p[n] for n in names if p[n].dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": float(WEIGHT_DECAY)},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=float(LR), betas=(float(BETA1), float(BETA2)), eps=float(EPS))
    step_losses, grad_norms = [], []
    for step in range(ADAMW_STEPS):
        opt.zero_grad(set_to_none=True)
        step_loss = mean_loss(forward(p, cfg, tokens), targets)
        step_loss.backward()
        norm = float(torch.nn.utils.clip_grad_norm_(list(p.values()), grad_clip))
        if not norm > grad_clip:
            sys.exit(f"step {step + 1}: gradient norm {norm} does not exceed the clip "
                     f"threshold {grad_clip}, so clipping would not be tested")
        opt.step()
        step_losses.append(float(step_loss))
        grad_norms.append(norm)

    return dict(logits=logits.detach(), loss=loss.detach().reshape(1), grads=grads,
                step3={n: w.detach().clone() for n, w in p.items()},
                step_losses=torch.tensor(step_losses, dtype=torch.float64),
                grad_norms=torch.tensor(grad_norms, dtype=torch.float64),
                grad_clip=grad_clip)


def attention_sharpness(p, cfg, tokens):
    """Mean over layers, heads and rows (past the first) of the largest attention weight:
    1/row-length would mean uniform attention. Only a diagnostic for the summary."""
    with torch.no_grad():
        t = tokens.shape[1]
        hs = cfg["head_size"]
        x = embed(p, tokens)
        peaks = []
        for i in range(cfg["n_layer"]):
            h = f"transformer.h.{i}."
            xn = layernorm(x, p, h + "ln_1")
            q, k, _ = queries_keys_values(xn, p, h, cfg)
            causal = torch.ones(t, t, dtype=torch.bool).tril()
            att = (q @ k.transpose(-2, -1) / math.sqrt(hs)).masked_fill(~causal, float("-inf"))
            peaks.append(att.softmax(-1)[:, :, 1:, :].max(-1).values.mean())
            x = x + attention(xn, p, h, cfg)
            x = x + mlp(layernorm(x, p, h + "ln_2"), p, h)
        return float(torch.stack(peaks).mean())


def make_inputs(cfg):
    """Weights, tokens and targets of a fixture, all from its seed."""
    gen = torch.Generator().manual_seed(cfg["seed"])
    params = draw_parameters(cfg, gen)
    shape = (cfg["batch_size"], cfg["seq_len"])
    tokens = torch.randint(0, cfg["vocab_size"], shape, generator=gen)
    targets = torch.randint(0, cfg["vocab_size"], shape, generator=gen)
    return params, tokens, targets


# ----------------------------------------------------------------------------------------
# safetensors, written by hand

def tensor_bytes(tensor, dtype):
    """Little-endian bytes of a tensor as F32 or I32."""
    values = tensor.detach().reshape(-1).tolist()
    if dtype == "F32":
        return struct.pack(f"<{len(values)}f", *values)
    return struct.pack(f"<{len(values)}i", *values)


def write_safetensors(path, metadata, tensors):
    """tensors: list of (name, dtype, tensor). Layout: u64 header length, JSON header
    (padded with spaces so the data starts 8-byte aligned), then the data in list order."""
    header = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name, dtype, tensor in tensors:
        blob = tensor_bytes(tensor, dtype)
        header[name] = {"dtype": dtype, "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    data = struct.pack("<Q", len(text)) + text + b"".join(blobs)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return data


def fixture_contents(cfg, params, tokens, targets, ref):
    metadata = {key: str(cfg[key]) for key in
                ("vocab_size", "block_size", "n_layer", "n_head", "n_embd", "head_size",
                 "qkv_bias", "batch_size", "seq_len")}
    if is_rope(cfg):
        metadata["position_encoding"] = "rope"
    metadata.update(lr=LR, beta1=BETA1, beta2=BETA2, eps=EPS, weight_decay=WEIGHT_DECAY,
                    grad_clip=repr(ref["grad_clip"]), adamw_steps=str(ADAMW_STEPS),
                    format=FORMAT)
    tensors = [(n, "F32", w) for n, w in params.items()]
    tensors += [("tokens", "I32", tokens), ("targets", "I32", targets),
                ("logits", "F32", ref["logits"]), ("loss", "F32", ref["loss"])]
    tensors += [("grad." + n, "F32", g) for n, g in ref["grads"].items()]
    tensors += [("step3." + n, "F32", w) for n, w in ref["step3"].items()]
    tensors += [("step_losses", "F32", ref["step_losses"]),
                ("grad_norms", "F32", ref["grad_norms"])]
    return metadata, tensors


# ----------------------------------------------------------------------------------------
# sanity checks (--check)

def rel_error(got, want):
    """max |got - want| / max |want|, as tests/test.h defines it."""
    scale = float(want.abs().max())
    diff = float((got.double() - want.double()).abs().max())
    return diff / scale if scale > 0 else diff


def naive_rope(vec, i):
    """One head's query or key vector at position i, its pairs turned one by one."""
    out = vec.clone()
    hs = vec.shape[0]
    for k in range(hs // 2):
        a = i * ROPE_BASE ** (-2.0 * k / hs)
        out[2 * k] = math.cos(a) * vec[2 * k] - math.sin(a) * vec[2 * k + 1]
        out[2 * k + 1] = math.sin(a) * vec[2 * k] + math.cos(a) * vec[2 * k + 1]
    return out


def naive_attention(x, p, h, cfg):
    """attention() written as loops over batch, head and query position."""
    turn = naive_rope if is_rope(cfg) else (lambda vec, i: vec)
    B, t, _ = x.shape
    H, hs = cfg["n_head"], cfg["head_size"]
    A = H * hs
    qkv = x @ p[h + "attn.c_attn.weight"].t()
    if h + "attn.c_attn.bias" in p:
        qkv = qkv + p[h + "attn.c_attn.bias"]
    y = torch.zeros(B, t, A, dtype=x.dtype)
    for b in range(B):
        for j in range(H):
            cols = slice(j * hs, (j + 1) * hs)
            for i in range(t):
                q = turn(qkv[b, i, 0 * A:1 * A][cols], i)
                s = torch.stack([q @ turn(qkv[b, u, A:2 * A][cols], u) / math.sqrt(hs)
                                 for u in range(i + 1)])
                w = torch.exp(s - s.max())
                w = w / w.sum()
                y[b, i, cols] = sum(w[u] * qkv[b, u, 2 * A:3 * A][cols] for u in range(i + 1))
    return y @ p[h + "attn.c_proj.weight"].t() + p[h + "attn.c_proj.bias"]


def without_key_bias(tensor, name, cfg):
    """The tensor, less the key slice [A, 2A) when it is a c_attn bias. A constant added to
    every key shifts all of a query's scores equally, so the softmax ignores it: that slice
    has zero gradient in exact arithmetic and its AdamW update is driven by rounding noise
    (Adam divides the noise by its own size), so float32 and float64 need not agree there."""
    if not name.endswith("attn.c_attn.bias"):
        return tensor
    A = cfg["n_head"] * cfg["head_size"]
    return torch.cat([tensor[:A], tensor[2 * A:]])


def manual_adamw(cfg, params, tokens, targets, grad_clip):
    """The 3 training steps with clipping and AdamW written out as model/adamw.h states them,
    to confirm torch.optim.AdamW and clip_grad_norm_ follow the same formulas."""
    lr, b1, b2 = float(LR), float(BETA1), float(BETA2)
    eps, wd = float(EPS), float(WEIGHT_DECAY)
    p = {n: w.clone() for n, w in params.items()}
    m = {n: torch.zeros_like(w) for n, w in p.items()}
    v = {n: torch.zeros_like(w) for n, w in p.items()}
    for k in range(1, ADAMW_STEPS + 1):
        leaves = {n: w.clone().requires_grad_(True) for n, w in p.items()}
        mean_loss(forward(leaves, cfg, tokens), targets).backward()
        g = {n: w.grad for n, w in leaves.items()}
        norm = math.sqrt(sum(float((x ** 2).sum()) for x in g.values()))
        scale = grad_clip / (norm + 1e-6) if norm > grad_clip else 1.0
        for n in p:
            gn = g[n] * scale
            m[n] = b1 * m[n] + (1 - b1) * gn
            v[n] = b2 * v[n] + (1 - b2) * gn ** 2
            mhat = m[n] / (1 - b1 ** k)
            vhat = v[n] / (1 - b2 ** k)
            decay = wd if p[n].dim() >= 2 else 0.0
            p[n] = p[n] - lr * (mhat / (vhat.sqrt() + eps) + decay * p[n])
    return p


def check_fixture(cfg):
    params, tokens, targets = make_inputs(cfg)
    names = list(params)

    # 1. gradcheck of the whole mean loss with respect to every parameter
    def loss_of(*ws):
        return mean_loss(forward(dict(zip(names, ws)), cfg, tokens), targets)
    inputs = tuple(params[n].clone().requires_grad_(True) for n in names)
    ok = torch.autograd.gradcheck(loss_of, inputs, eps=1e-6, atol=1e-7, rtol=1e-5)
    print(f"  gradcheck of the loss w.r.t. all {sum(w.numel() for w in inputs)} "
          f"parameters (float64): {'passed' if ok else 'FAILED'}")

    # 2. our own central differences on a few elements, reported as a number
    ref = compute_reference(cfg, params, tokens, targets, torch.float64)
    worst = 0.0
    for n in names:
        flat = params[n].reshape(-1)
        for idx in sorted({0, flat.numel() // 2, flat.numel() - 1}):
            step = 1e-6
            plus = {k: w.clone() for k, w in params.items()}
            minus = {k: w.clone() for k, w in params.items()}
            plus[n].view(-1)[idx] += step
            minus[n].view(-1)[idx] -= step
            with torch.no_grad():
                fd = (mean_loss(forward(plus, cfg, tokens), targets)
                      - mean_loss(forward(minus, cfg, tokens), targets)) / (2 * step)
            g = ref["grads"][n].reshape(-1)[idx]
            worst = max(worst, abs(float(fd - g)) / max(float(ref["grads"][n].abs().max()), 1e-12))
    print(f"  central differences vs autograd, 3 elements of each tensor: "
          f"max error / tensor max |grad| = {worst:.2e}")

    # 3. torch's AdamW and clipping against the formulas of model/adamw.h
    manual = manual_adamw(cfg, params, tokens, targets, ref["grad_clip"])
    adam_err = max(rel_error(without_key_bias(manual[n], n, cfg),
                             without_key_bias(ref["step3"][n], n, cfg)) for n in names)
    print("  torch AdamW + clip_grad_norm_ vs model/adamw.h formulas (without the key bias): "
          f"rel error {adam_err:.2e}")

    # 4. attention() against the loop version
    with torch.no_grad():
        x = embed(params, tokens)
        att_err = rel_error(attention(x, params, "transformer.h.0.", cfg),
                            naive_attention(x, params, "transformer.h.0.", cfg))
    print(f"  attention vs per-head loop version: rel error {att_err:.2e}")

    # 5. the float32 evaluation of the same computation agrees with float64
    ref32 = compute_reference(cfg, params, tokens, targets, torch.float32, ref["grad_clip"])
    err = {"logits": rel_error(ref32["logits"], ref["logits"]),
           "loss": rel_error(ref32["loss"], ref["loss"]),
           "grads": max(rel_error(ref32["grads"][n], ref["grads"][n]) for n in names),
           "step3": max(rel_error(without_key_bias(ref32["step3"][n], n, cfg),
                                  without_key_bias(ref["step3"][n], n, cfg)) for n in names),
           "step_losses": rel_error(ref32["step_losses"], ref["step_losses"]),
           "grad_norms": rel_error(ref32["grad_norms"], ref["grad_norms"])}
    print("  float32 vs float64 (max-norm rel error, worst tensor; step3 without the key "
          "bias): " + ", ".join(f"{k} {v:.1e}" for k, v in err.items()))
    if cfg["qkv_bias"]:
        A = cfg["n_head"] * cfg["head_size"]
        bias = [n for n in names if n.endswith("attn.c_attn.bias")]
        print("  key bias c_attn.bias[A:2A] (zero gradient in exact arithmetic): |grad| "
              f"float64 {max(float(ref['grads'][n][A:2 * A].abs().max()) for n in bias):.1e}, "
              f"float32 {max(float(ref32['grads'][n][A:2 * A].abs().max()) for n in bias):.1e}; "
              "step3 float32 - float64 up to "
              f"{max(float((ref32['step3'][n] - ref['step3'][n])[A:2 * A].abs().max()) for n in bias):.1e}")
    magnitudes = torch.cat([without_key_bias(g, n, cfg).abs().reshape(-1)
                            for n, g in ref["grads"].items()])
    zeros = int((magnitudes == 0).sum())
    print(f"  outside the key bias: smallest nonzero |grad| "
          f"{float(magnitudes[magnitudes > 0].min()):.1e}, {zeros} exactly-zero gradient "
          "elements (wpe rows >= seq_len)")
    return (ok and worst < 1e-6 and adam_err < 1e-12 and att_err < 1e-12
            and max(err.values()) < 1e-5)


# ----------------------------------------------------------------------------------------

def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out-dir", default=os.path.join(repo, "tests", "fixtures"),
                        help="where to write the fixtures (default: tests/fixtures)")
    parser.add_argument("--check", action="store_true",
                        help="run the sanity checks instead of writing fixtures")
    args = parser.parse_args()

    # one thread and deterministic kernels: the same bytes on every run
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    if args.check:
        all_ok = True
        for cfg in FIXTURES:
            print(cfg["file"])
            all_ok = check_fixture(cfg) and all_ok
        print("all checks passed" if all_ok else "SOME CHECKS FAILED")
        sys.exit(0 if all_ok else 1)

    os.makedirs(args.out_dir, exist_ok=True)
    for cfg in FIXTURES:
        params, tokens, targets = make_inputs(cfg)
        ref = compute_reference(cfg, params, tokens, targets, torch.float64)
        metadata, tensors = fixture_contents(cfg, params, tokens, targets, ref)
        path = os.path.join(args.out_dir, cfg["file"])
        data = write_safetensors(path, metadata, tensors)
        nparams = sum(w.numel() for w in params.values())
        print(f"{path}: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:16]}")
        print(f"  V={cfg['vocab_size']} T={cfg['block_size']} L={cfg['n_layer']} "
              f"H={cfg['n_head']} C={cfg['n_embd']} hs={cfg['head_size']} "
              f"qkv_bias={cfg['qkv_bias']} B={cfg['batch_size']} t={cfg['seq_len']}"
              f"{' rope' if is_rope(cfg) else ''}: "
              f"{len(params)} tensors, {nparams} parameters")
        print(f"  loss {float(ref['loss']):.6f} (uniform would be "
              f"{math.log(cfg['vocab_size']):.6f}), mean peak attention weight "
              f"{attention_sharpness(params, cfg, tokens):.3f}")
        print(f"  grad_clip {ref['grad_clip']}; per step: loss "
              + ", ".join(f"{x:.6f}" for x in ref["step_losses"].tolist())
              + "; grad norm " + ", ".join(f"{x:.6f}" for x in ref["grad_norms"].tolist()))


if __name__ == "__main__":
    main()
