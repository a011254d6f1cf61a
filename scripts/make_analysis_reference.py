#!/usr/bin/python3
"""PyTorch reference for analysis/: writes tests/fixtures/analysis.safetensors.

The measures of chargpt's analysis room, computed in float64 as TransformerLens defines them,
written out here in torch (TransformerLens itself is not needed): a model of
scripts/make_reference.py's kind with hook points where TransformerLens has them (hook_z: each
head's output before W_O; hook_resid_pre: the residual stream entering a block, and the one
entering ln_f), and on it

  - direct logit attribution: the residual stream split into the embeddings, each head's
    result, each MLP's output and the biases (each layer's b_O), each part centred and
    divided by the final LayerNorm's scale (ActivationCache.apply_ln_to_stack), times ln_f's
    weight and an unembedding column (fold_ln), ln_f's bias . W_U added to the biases;
  - activation patching: the corrupted run with hook_z of one head at every position
    (get_act_patch_attn_head_out_all_pos) or hook_resid_pre of one block at one position
    (get_act_patch_resid_pre) replaced by the clean run's, the metric the logit difference
    at the last position between the clean and the corrupted runs' most likely next tokens,
    normalised: (patched - corrupted) / (clean - corrupted);
  - mean ablation: hook_z of one head replaced by its mean over every position of a
    reference batch, and the mean cross-entropy of a text then;
  - circuits: the full OV circuits W_E W_V W_O W_U (raw) and from the extended embedding,
    their eigenvalues (numpy) and copying scores sum(l) / sum(|l|), the QK circuits over
    positions and characters (raw and extended), the Q-, K- and V-composition scores
    |W_A W_B| / (|W_A| |W_B|) of every pair of heads in two layers; analysis/circuits.h
    defines each (ln_1's scale folded into W_Q, W_K and W_V, ln_f's into W_U; no bias,
    nothing centred);
  - eigenvalues (numpy) of a random 40 x 40 matrix, for the eigenvalue routine alone.

Usage:
    /usr/bin/python3 scripts/make_analysis_reference.py   # writes tests/fixtures/analysis.safetensors
"""
import argparse
import hashlib
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference as ref  # noqa: E402  the model, its weights and the file writer

FORMAT = "chargpt-analysis-1"
CFG = dict(seed=4321, vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=12, head_size=5, qkv_bias=1)
REFERENCE_ROWS = 3  # the mean ablation's reference batch: 3 sequences of block_size tokens
EIGEN_N = 40


# ----------------------------------------------------------------------------------------
# the model with TransformerLens's hook points

def head_weights(p, cfg, layer, head):
    """W_Q, W_K, W_V (C x hs) and W_O (hs x C) of one head, x W convention, no LayerNorm."""
    h = f"transformer.h.{layer}."
    A, hs = cfg["n_head"] * cfg["head_size"], cfg["head_size"]
    w = p[h + "attn.c_attn.weight"]
    rows = lambda part: w[part * A + head * hs: part * A + (head + 1) * hs].t()
    return rows(0), rows(1), rows(2), p[h + "attn.c_proj.weight"][:, head * hs:(head + 1) * hs].t()


def hooked_forward(p, cfg, tokens, patch_z=None, patch_resid=None):
    """Logits (B, t, V) and a cache of tokens (B, t): cache["resid_pre", l] the residual stream
    entering block l (l = n_layer: entering ln_f), cache["z", l] each head's output before
    W_O (B, t, H, hs), cache["mlp_out", l], cache["scale"] ln_f's sqrt(var + eps) (B, t, 1).
    patch_z(l, z) and patch_resid(l, x) return the activation to use in place of the one
    computed (TransformerLens's forward hooks)."""
    B, t = tokens.shape
    H, hs = cfg["n_head"], cfg["head_size"]
    cache = {}
    x = ref.embed(p, tokens)
    for l in range(cfg["n_layer"] + 1):
        if patch_resid:
            x = patch_resid(l, x)
        cache["resid_pre", l] = x
        if l == cfg["n_layer"]:
            break
        h = f"transformer.h.{l}."
        q, k, v = ref.queries_keys_values(ref.layernorm(x, p, h + "ln_1"), p, h, cfg)
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        att = (q @ k.transpose(-2, -1) / math.sqrt(hs)).masked_fill(~causal, float("-inf")).softmax(-1)
        z = (att @ v).transpose(1, 2)  # (B, t, H, hs)
        if patch_z:
            z = patch_z(l, z)
        cache["z", l] = z
        x = x + F.linear(z.reshape(B, t, H * hs), p[h + "attn.c_proj.weight"], p[h + "attn.c_proj.bias"])
        cache["mlp_out", l] = ref.mlp(ref.layernorm(x, p, h + "ln_2"), p, h)
        x = x + cache["mlp_out", l]
    var = x.var(-1, unbiased=False, keepdim=True)
    cache["scale"] = (var + ref.LAYERNORM_EPS).sqrt()
    return ref.layernorm(x, p, "transformer.ln_f") @ p["transformer.wte.weight"].t(), cache


# ----------------------------------------------------------------------------------------
# direct logit attribution

def residual_stack(p, cfg, cache):
    """The parts of the final residual stream (K, B, t, C): the embeddings, each head's result
    z W_O, each MLP's output, each layer's b_O (summed into one "biases" part)."""
    L, H = cfg["n_layer"], cfg["n_head"]
    parts = [cache["resid_pre", 0]]
    for l in range(L):
        for h in range(H):
            parts.append(cache["z", l][:, :, h] @ head_weights(p, cfg, l, h)[3])
    parts += [cache["mlp_out", l] for l in range(L)]
    parts.append(sum(p[f"transformer.h.{l}.attn.c_proj.bias"] for l in range(L)).expand_as(parts[0]))
    return torch.stack(parts)


def apply_ln_to_stack(stack, scale):
    """ActivationCache.apply_ln_to_stack for the final LayerNorm: each part centred and
    divided by the scale the whole stream had."""
    return (stack - stack.mean(-1, keepdim=True)) / scale


def attribution(p, cfg, tokens):
    """Per position (t, K) the logit of the target (the next token; the most likely at the
    last position) and its difference from the rival (the most likely other), split."""
    logits, cache = hooked_forward(p, cfg, tokens[None])
    logits = logits[0]
    t, V = logits.shape
    target = torch.cat([tokens[1:], logits[-1].argmax()[None]])
    rival = torch.stack([logits[i].masked_fill(torch.arange(V) == target[i], -math.inf).argmax() for i in range(t)])
    w_u = p["transformer.ln_f.weight"][:, None] * p["transformer.wte.weight"].t()  # fold_ln: (C, V)
    b_u = p["transformer.ln_f.bias"] @ p["transformer.wte.weight"].t()               # (V)
    scaled = apply_ln_to_stack(residual_stack(p, cfg, cache), cache["scale"])[:, 0]  # (K, t, C)
    rows = torch.arange(t)
    logit_parts = torch.einsum("ktc,ct->tk", scaled, w_u[:, target])
    diff_parts = torch.einsum("ktc,ct->tk", scaled, w_u[:, target] - w_u[:, rival])
    logit_parts[:, -1] += b_u[target]
    diff_parts[:, -1] += b_u[target] - b_u[rival]
    assert torch.allclose(logit_parts.sum(1), logits[rows, target], atol=1e-10)
    return dict(target=target, rival=rival, logit=logits[rows, target], logit_parts=logit_parts,
                difference_parts=diff_parts)


# ----------------------------------------------------------------------------------------
# activation patching and mean ablation

def logit_difference(logits, answers):
    return logits[0, -1, answers[0]] - logits[0, -1, answers[1]]


def patching(p, cfg, clean, corrupted):
    L, H, t = cfg["n_layer"], cfg["n_head"], clean.shape[0]
    clean_logits, clean_cache = hooked_forward(p, cfg, clean[None])
    corrupted_logits, _ = hooked_forward(p, cfg, corrupted[None])
    answers = torch.stack([clean_logits[0, -1].argmax(), corrupted_logits[0, -1].argmax()])
    assert answers[0] != answers[1], "the clean and corrupted texts must predict different tokens"
    m_clean, m_corrupted = logit_difference(clean_logits, answers), logit_difference(corrupted_logits, answers)
    share = lambda logits: (logit_difference(logits, answers) - m_corrupted) / (m_clean - m_corrupted)

    def patch_head(layer, head):
        def hook(l, z):
            if l != layer:
                return z
            z = z.clone()
            z[:, :, head] = clean_cache["z", l][:, :, head]
            return z
        return hook

    def patch_position(layer, pos):
        def hook(l, x):
            if l != layer:
                return x
            x = x.clone()
            x[:, pos] = clean_cache["resid_pre", l][:, pos]
            return x
        return hook

    heads = torch.tensor([[share(hooked_forward(p, cfg, corrupted[None], patch_z=patch_head(l, h))[0])
                           for h in range(H)] for l in range(L)])
    residual = torch.tensor([[share(hooked_forward(p, cfg, corrupted[None], patch_resid=patch_position(l, i))[0])
                              for i in range(t)] for l in range(L + 1)])
    return dict(answers=answers, metric=torch.stack([m_clean, m_corrupted]), heads=heads, residual=residual)


def mean_ablation(p, cfg, tokens, reference):
    """Each head's mean output over the reference batch, and the mean cross-entropy of tokens
    (predicting tokens[1:]) with that head's output replaced by its mean."""
    L, H = cfg["n_layer"], cfg["n_head"]
    _, cache = hooked_forward(p, cfg, reference)
    means = torch.stack([cache["z", l].mean((0, 1)) for l in range(L)])  # (L, H, hs)

    def loss_without(layer, head):
        def hook(l, z):
            if l != layer:
                return z
            z = z.clone()
            z[:, :, head] = means[l, head]
            return z
        logits = hooked_forward(p, cfg, tokens[None, :-1], patch_z=hook)[0][0]
        return F.cross_entropy(logits, tokens[1:])

    loss = torch.tensor([[loss_without(l, h) for h in range(H)] for l in range(L)])
    return dict(means=means, loss=loss)


# ----------------------------------------------------------------------------------------
# circuits

def extended_embeddings(p, cfg, layer):
    """The characters' (V, C) and positions' (T, C) rows as head `layer` reads them: each
    embedding plus the other table's mean, through the MLPs below (each after its ln_2),
    then through the layer's ln_1 (scale and bias)."""
    wte, wpe = p["transformer.wte.weight"], p["transformer.wpe.weight"]
    x = torch.cat([wte + wpe.mean(0), wpe + wte.mean(0)])
    for l in range(layer):
        h = f"transformer.h.{l}."
        x = x + ref.mlp(ref.layernorm(x, p, h + "ln_2"), p, h)
    x = ref.layernorm(x, p, f"transformer.h.{layer}.ln_1")
    return x[:wte.shape[0]], x[wte.shape[0]:]


def composition_score(w_a, w_b):
    return (w_a @ w_b).norm() / (w_a.norm() * w_b.norm())


def circuits(p, cfg):
    L, H = cfg["n_layer"], cfg["n_head"]
    wte, wpe = p["transformer.wte.weight"], p["transformer.wpe.weight"]
    w_u = p["transformer.ln_f.weight"][:, None] * wte.t()
    out = {k: [] for k in ("ov", "ov_raw", "qk_positions", "qk_positions_raw", "qk_characters",
                           "qk_characters_raw")}
    folded = {}
    for l in range(L):
        g = p[f"transformer.h.{l}.ln_1.weight"][:, None]
        chars, positions = extended_embeddings(p, cfg, l)
        for h in range(H):
            wq, wk, wv, wo = head_weights(p, cfg, l, h)
            folded[l, h] = (g * wq, g * wk, g * wv, wo)
            out["ov_raw"].append(wte @ (g * wv) @ wo @ w_u)
            out["ov"].append(chars @ wv @ wo @ w_u)
            out["qk_characters_raw"].append(wte @ (g * wq) @ (wte @ (g * wk)).t())
            out["qk_characters"].append(chars @ wq @ (chars @ wk).t())
            out["qk_positions_raw"].append(wpe @ (g * wq) @ (wpe @ (g * wk)).t())
            out["qk_positions"].append(positions @ wq @ (positions @ wk).t())
    res = {k: torch.stack(v).reshape(L, H, *v[0].shape) for k, v in out.items()}
    for name in ("ov", "ov_raw"):
        eig = [np.linalg.eigvals(m.numpy()) for m in res[name].reshape(L * H, *res[name].shape[2:])]
        res[name + "_eigen_re"] = torch.tensor(np.array([e.real for e in eig])).reshape(L, H, -1)
        res[name + "_eigen_im"] = torch.tensor(np.array([e.imag for e in eig])).reshape(L, H, -1)
        res[name.replace("ov", "ov_copying_score")] = torch.tensor(
            [e.real.sum() / np.abs(e).sum() for e in eig]).reshape(L, H)
        V = res[name].shape[-1]
        res[name.replace("ov", "ov_diagonal_share")] = (
            (res[name].argmax(-1) == torch.arange(V)).double().mean(-1))
    for kind in "qkv":
        comp = torch.zeros(L, H, L, H, dtype=torch.float64)
        for (l1, h1), (_, _, wv1, wo1) in folded.items():
            for (l2, h2), (wq2, wk2, wv2, wo2) in folded.items():
                if l2 <= l1:
                    continue
                w_b = {"q": wq2 @ wk2.t(), "k": wk2 @ wq2.t(), "v": wv2 @ wo2}[kind]
                comp[l1, h1, l2, h2] = composition_score(wv1 @ wo1, w_b)
        res["composition_" + kind] = comp
    return res


# ----------------------------------------------------------------------------------------

def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(repo, "tests", "fixtures", "analysis.safetensors"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    cfg = CFG
    gen = torch.Generator().manual_seed(cfg["seed"])
    p = ref.draw_parameters(cfg, gen)
    T, V = cfg["block_size"], cfg["vocab_size"]
    tokens = torch.randint(0, V, (T,), generator=gen)
    reference = torch.randint(0, V, (REFERENCE_ROWS, T), generator=gen)
    # a corrupted text: the clean one with characters changed until its prediction differs
    clean = torch.randint(0, V, (T,), generator=gen)
    while True:
        corrupted = clean.clone()
        changed = torch.randint(0, T, (2,), generator=gen)
        corrupted[changed] = torch.randint(0, V, (2,), generator=gen)
        with torch.no_grad():
            if hooked_forward(p, cfg, clean[None])[0][0, -1].argmax() != \
                    hooked_forward(p, cfg, corrupted[None])[0][0, -1].argmax():
                break
    matrix = torch.randn(EIGEN_N, EIGEN_N, generator=gen, dtype=torch.float64).to(torch.float32).to(torch.float64)
    eig = np.linalg.eigvals(matrix.numpy())

    with torch.no_grad():
        dla = attribution(p, cfg, tokens)
        patch = patching(p, cfg, clean, corrupted)
        ablation = mean_ablation(p, cfg, tokens, reference)
        circ = circuits(p, cfg)

    metadata = {key: str(cfg[key]) for key in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd",
                                               "head_size", "qkv_bias")}
    metadata["format"] = FORMAT
    f32 = lambda name, x: (name, "F32", x)
    i32 = lambda name, x: (name, "I32", x)
    tensors = [f32(n, w) for n, w in p.items()]
    tensors += [i32("attribution.tokens", tokens), i32("attribution.target", dla["target"]),
                i32("attribution.rival", dla["rival"]), f32("attribution.logit", dla["logit"]),
                f32("attribution.logit_parts", dla["logit_parts"]),
                f32("attribution.difference_parts", dla["difference_parts"])]
    tensors += [i32("patching.clean", clean), i32("patching.corrupted", corrupted),
                i32("patching.answers", patch["answers"]), f32("patching.metric", patch["metric"]),
                f32("patching.heads", patch["heads"]), f32("patching.residual", patch["residual"])]
    tensors += [i32("mean_ablation.reference", reference.reshape(-1)), f32("mean_ablation.means", ablation["means"]),
                f32("mean_ablation.loss", ablation["loss"])]
    tensors += [f32("circuits." + name, x) for name, x in sorted(circ.items())]
    tensors += [f32("eigen.matrix", matrix), f32("eigen.re", torch.tensor(eig.real)),
                f32("eigen.im", torch.tensor(eig.imag))]
    data = ref.write_safetensors(args.out, metadata, tensors)
    print(f"{args.out}: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:16]}")
    print(f"  attribution: targets {dla['target'].tolist()}, logits "
          + ", ".join(f"{x:.4f}" for x in dla["logit"].tolist()))
    print(f"  patching: answers {patch['answers'].tolist()}, metric clean {float(patch['metric'][0]):.4f}, corrupted "
          f"{float(patch['metric'][1]):.4f}; heads {np.round(patch['heads'].numpy(), 4).tolist()}; last residual row "
          f"{np.round(patch['residual'][-1].numpy(), 4).tolist()}")
    print(f"  mean ablation: loss {np.round(ablation['loss'].numpy(), 4).tolist()}")
    print(f"  OV copying scores: extended {np.round(circ['ov_copying_score'].numpy(), 4).tolist()}, raw "
          f"{np.round(circ['ov_copying_score_raw'].numpy(), 4).tolist()}")
    print(f"  K-composition of layer 0 into layer 1: {np.round(circ['composition_k'][0, :, 1].numpy(), 4).tolist()}")


if __name__ == "__main__":
    main()
