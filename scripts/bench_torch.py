#!/usr/bin/python3
"""PyTorch peer of scripts/bench: the same GPT shapes trained the same way, on random tokens.

A nanoGPT-style GPT-2 (pre-LayerNorm, output head tied to wte, tanh GELU, bias in c_attn,
no dropout) built from torch.nn modules, trained with forward, backward, clip_grad_norm_(1.0)
and torch.optim.AdamW (its default, non-fused implementation; weight decay on matrices and
embeddings only), as nanoGPT's train.py does. Batches are random tokens of the same shape as
scripts/bench uses. Peak RSS (ru_maxrss) is read right after the timed training steps, so it
covers training only; run one config per process to keep the figures apart.

Training is timed as scripts/bench times chargpt's: ms/step is the timed steps' wall time over
their count (the median and the fastest step are printed too). The instruction sets PyTorch
runs on are its environment's (scripts/bench.sh holds ATen, OpenBLAS and oneDNN to the one of
chargpt's kernels); isa= names ATen's, as torch.__config__.show() gives it.

Generation, as nanoGPT's generate(): for every character the whole window goes through the
model (no key/value cache) and the last position's logits are sampled (temperature 0.8).
The window is nanoGPT's crop to the last block_size tokens, which is also chargpt's ./generate
default (--stride 1), so both programs run the same token counts per character.

With --bf16, the forward passes (training and generation) run under
torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's own mixed precision: matrix products
in bf16, master weights, optimizer and the ops autocast keeps in fp32 unchanged; the
output's kinds are then torch_bf16_train and torch_bf16_generate.
Output: one line per result, "kind key=value ...", read by scripts/bench.sh.

Usage:
    /usr/bin/python3 scripts/bench_torch.py --config tiny [--threads 2] [--seconds 4] [--gen-chars 500]
"""
import argparse
import contextlib
import math
import resource
import signal
import statistics
import sys
import time

# Ctrl-C ends the process by the signal, as it does the C programs, so that bench.sh sees
# it and stops (a KeyboardInterrupt would be taken for an ordinary failure); set before
# the slow import of torch
signal.signal(signal.SIGINT, signal.SIG_DFL)

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = {
    "lesson": dict(n_layer=2, n_head=4, n_embd=64, block_size=64, batch_size=32, vocab_size=65),
    "tiny": dict(n_layer=4, n_head=4, n_embd=128, block_size=64, batch_size=12, vocab_size=65),
    "small": dict(n_layer=6, n_head=6, n_embd=384, block_size=256, batch_size=8, vocab_size=65),
}
LEARNING_RATE = 1e-3
BETAS = (0.9, 0.99)
EPS = 1e-8
WEIGHT_DECAY = 0.1
GRAD_CLIP = 1.0
TEMPERATURE = 0.8
PROMPT_LEN = 8
MIN_TIMED_STEPS = 3
SEED = 1337


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C = cfg["n_embd"]
        self.n_head = cfg["n_head"]
        self.c_attn = nn.Linear(C, 3 * C, bias=True)
        self.c_proj = nn.Linear(C, C, bias=True)
        T = cfg["block_size"]
        self.register_buffer("causal", torch.ones(T, T, dtype=torch.bool).tril())

    def forward(self, x):
        """(B, t, C) -> (B, t, C): softmax(q k^T / sqrt(hs)) v over positions <= i, per head."""
        B, t, C = x.shape
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, t, self.n_head, hs).transpose(1, 2)  # (B, H, t, hs)
        k = k.view(B, t, self.n_head, hs).transpose(1, 2)
        v = v.view(B, t, self.n_head, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, H, t, t)
        att = att.masked_fill(~self.causal[:t, :t], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, t, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C = cfg["n_embd"]
        self.ln_1 = nn.LayerNorm(C)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(C)
        self.c_fc = nn.Linear(C, 4 * C)
        self.c_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C = cfg["n_embd"]
        self.wte = nn.Embedding(cfg["vocab_size"], C)
        self.wpe = nn.Embedding(cfg["block_size"], C)
        self.h = nn.ModuleList(Block(cfg) for _ in range(cfg["n_layer"]))
        self.ln_f = nn.LayerNorm(C)
        self.lm_head = nn.Linear(C, cfg["vocab_size"], bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        for name, p in self.named_parameters():  # nanoGPT's initialisation
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * cfg["n_layer"]) if name.endswith("c_proj.weight") else 0.02
                nn.init.normal_(p, mean=0.0, std=std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, targets=None):
        """Logits (B, t, V) and the mean cross-entropy with targets; without targets, the
        logits of the last position only (B, 1, V), as nanoGPT's inference path."""
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(t))
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        if targets is None:
            return self.lm_head(x[:, [-1], :]), None
        logits = self.lm_head(x)
        return logits, F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def make_optimizer(model):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=LEARNING_RATE, betas=BETAS, eps=EPS)


def random_batch(gen, cfg):
    """Random tokens (B, T+1): inputs are the first T, targets the last T."""
    seq = torch.randint(cfg["vocab_size"], (cfg["batch_size"], cfg["block_size"] + 1), generator=gen)
    return seq[:, :-1], seq[:, 1:]


PRECISION = contextlib.nullcontext  # the forward's context: fp32, or autocast to bf16 (--bf16)
KIND = "torch"


def train_step(model, opt, gen, cfg):
    x, y = random_batch(gen, cfg)
    with PRECISION():
        _, loss = model(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
    opt.step()
    return float(loss)


def bench_train(model, cfg, args):
    B, T = cfg["batch_size"], cfg["block_size"]
    gen = torch.Generator().manual_seed(SEED)
    opt = make_optimizer(model)
    model.train()
    first_loss = train_step(model, opt, gen, cfg)
    for _ in range(1, args.warmup):
        train_step(model, opt, gen, cfg)
    step_secs = []
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    total = 0.0
    loss = float("nan")
    while (len(step_secs) < args.steps) if args.steps else (len(step_secs) < MIN_TIMED_STEPS or total < args.seconds):
        t0 = time.perf_counter()
        loss = train_step(model, opt, gen, cfg)
        step_secs.append(time.perf_counter() - t0)
        total = time.perf_counter() - start
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    if not math.isfinite(loss):
        sys.exit(f"bench_torch: {args.config}: the loss is not finite")
    cpu = (usage1.ru_utime + usage1.ru_stime) - (usage0.ru_utime + usage0.ru_stime)
    # as scripts/bench: ms/step over the whole timed run, the median and fastest step beside it
    steps = len(step_secs)
    mean = total / steps
    print(f"{KIND}_train config={args.config} threads={torch.get_num_threads()} torch={torch.__version__} "
          f"isa={aten_isa()} params={sum(p.numel() for p in model.parameters())} warmup={args.warmup} "
          f"steps={steps} ms_per_step={1000 * mean:.3f} ms_median={1000 * statistics.median(step_secs):.3f} "
          f"ms_min={1000 * min(step_secs):.3f} tok_per_s={B * T / mean:.1f} "
          f"rss_kb={usage1.ru_maxrss} cpu_pct={100 * cpu / (total * torch.get_num_threads()):.0f} "
          f"first_loss={first_loss:.4f} last_loss={loss:.4f}", flush=True)


def aten_isa():
    """ATen's instruction set ("AVX2", "AVX512", "NO AVX"), as one word."""
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage:" in line:
            return line.split(":", 1)[1].strip().replace(" ", "_")
    return "unknown"


@torch.no_grad()
def generate(model, prompt, n, T, max_secs, gen):
    """Up to n characters after prompt, the whole window recomputed for each; stops early
    after the character that passes max_secs. Returns (characters, seconds)."""
    text = list(prompt)
    made = 0
    t0 = time.perf_counter()
    while made < n:
        window = torch.tensor([text[-T:]], dtype=torch.long)
        with PRECISION():
            logits, _ = model(window)
        logits = logits.float()
        probs = F.softmax(logits[:, -1, :] / TEMPERATURE, dim=-1)
        text.append(int(torch.multinomial(probs, num_samples=1, generator=gen)))
        made += 1
        if time.perf_counter() - t0 > max_secs:
            break
    return made, time.perf_counter() - t0


def bench_generate(model, cfg, args):
    model.eval()
    gen = torch.Generator().manual_seed(SEED + 1)
    prompt = torch.randint(cfg["vocab_size"], (PROMPT_LEN,), generator=gen).tolist()
    generate(model, prompt, 8, cfg["block_size"], args.gen_seconds, gen)  # warm-up
    chars, secs = generate(model, prompt, args.gen_chars, cfg["block_size"], args.gen_seconds, gen)
    print(f"{KIND}_generate config={args.config} threads={torch.get_num_threads()} prompt={PROMPT_LEN} "
          f"block={cfg['block_size']} nocache_chars={chars} nocache_chars_per_s={chars / secs:.1f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), required=True)
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    ap.add_argument("--seconds", type=float, default=4.0,
                    help=f"time training steps for at least this long, and at least {MIN_TIMED_STEPS} steps")
    ap.add_argument("--steps", type=int, default=0, help="exactly this many timed steps instead")
    ap.add_argument("--warmup", type=int, default=2, help="untimed training steps first, at least 1")
    ap.add_argument("--gen-chars", type=int, default=500, help="characters to generate; 0 = skip generation")
    ap.add_argument("--gen-seconds", type=float, default=20.0, help="end generation early after this long")
    ap.add_argument("--bf16", action="store_true", help='forward passes under torch.autocast("cpu", bfloat16)')
    args = ap.parse_args()
    global PRECISION, KIND
    if args.bf16:
        PRECISION = lambda: torch.autocast("cpu", dtype=torch.bfloat16)  # noqa: E731
        KIND = "torch_bf16"
    if args.threads < 1 or args.warmup < 1 or args.steps < 0 or args.gen_chars < 0:
        ap.error("--threads and --warmup must be at least 1; --steps and --gen-chars not negative")
    torch.set_num_threads(args.threads)
    torch.manual_seed(SEED)
    cfg = CONFIGS[args.config]
    model = GPT(cfg)
    bench_train(model, cfg, args)
    if args.gen_chars > 0:
        bench_generate(model, cfg, args)


if __name__ == "__main__":
    main()
