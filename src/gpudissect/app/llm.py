"""Llama text generation timed the way 000 §6.4 / Table XV does, on transformers' LlamaForCausalLM
with random weights built from a config (throughput needs no trained weights; nothing is downloaded).

Two paths over the same model and static KV cache:
* `generate`: transformers' own generate (greedy, static cache, its automatic torch.compile off
  unless asked) — what a user of the library gets, and what the paper timed;
* `graph`: our decode loop, prefill eager and each decode step replayed from one CUDA graph
  (captured once over the static cache, with the position and the mask in device tensors) —
  the same model with the Python and launch overhead taken away.

Both are checked teacher-forced: one full forward over prompt + generated tokens must rank each
generated token first, or within a small logit gap of the first (near ties flip under rounding).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Any

from ..analysis.roofline import LlamaShape
from .timing import event_ms

RMS_EPS = {"3b": 1e-6, "7b": 1e-5, "13b": 1e-5}
MAX_POS = {"3b": 2048, "7b": 4096, "13b": 4096}


def llama_config(transformers: Any, m: LlamaShape) -> Any:
    cfg = transformers.LlamaConfig(
        vocab_size=m.vocab,
        hidden_size=m.hidden,
        intermediate_size=m.intermediate,
        num_hidden_layers=m.layers,
        num_attention_heads=m.heads,
        num_key_value_heads=m.kv_heads,
        max_position_embeddings=MAX_POS.get(m.name, 4096),
        rms_norm_eps=RMS_EPS.get(m.name, 1e-5),
        tie_word_embeddings=False,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    cfg._attn_implementation = "sdpa"
    return cfg


def build_model(torch: Any, transformers: Any, m: LlamaShape, dtype: Any, device: str, seed: int = 0) -> Any:
    """Random-weight LlamaForCausalLM, initialised directly on `device` in `dtype` (transformers'
    own initialisation: normal(0, 0.02) weights, unit norms)."""
    torch.manual_seed(seed)
    cfg = llama_config(transformers, m)
    with torch.device(device):
        model = transformers.LlamaForCausalLM._from_config(cfg, dtype=dtype, attn_implementation="sdpa")
    model.eval()
    model.requires_grad_(False)
    gc_cfg = model.generation_config
    gc_cfg.eos_token_id = None  # random weights: never stop early, and no EOS masking to distort the check
    gc_cfg.pad_token_id = 0
    gc_cfg.bos_token_id = 1
    return model


def to_fp8(torch: Any, model: Any) -> int:
    """Every nn.Linear of the decoder layers becomes a Float8InferenceLinear (weights cast to e4m3
    once); the LM head stays in the model's type. Returns how many were swapped."""
    from .float8 import Float8InferenceLinear, swap_linears

    n = swap_linears(model.model, Float8InferenceLinear.from_linear)
    gc.collect()
    torch.cuda.empty_cache()
    return n


def prompt_ids(torch: Any, vocab: int, batch: int, length: int, device: str, seed: int = 7) -> Any:
    g = torch.Generator(device="cpu")
    g.manual_seed(seed)
    return torch.randint(3, vocab, (batch, length), generator=g).to(device)


@dataclass
class GenTiming:
    total_ms: list[float]  # prompt -> all new tokens
    prefill_ms: list[float]  # prompt -> first new token
    tokens: Any  # (batch, new) generated ids of the last repetition
    how: str


def stop_at(torch: Any, transformers: Any, length: int) -> Any:
    """A StoppingCriteriaList that ends generate once a sequence (prompt + new) holds `length` tokens."""

    class StopAt(transformers.StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            done = input_ids.shape[1] >= length
            return torch.full((input_ids.shape[0],), done, device=input_ids.device, dtype=torch.bool)

    return transformers.StoppingCriteriaList([StopAt()])


def hf_generate(
    torch: Any,
    transformers: Any,
    model: Any,
    ids: Any,
    new_tokens: int,
    reps: int,
    compile: bool = False,
    warm_tokens: int | None = None,
) -> GenTiming:
    """transformers' generate: greedy, static cache. Prefill time = generate with one new token.

    The warm-up is the timed call itself, stopped after `warm_tokens` new tokens when given (None: all of
    them). It asks for the same max_new_tokens, so it builds the same static cache (transformers sizes it from
    max_length, never below an earlier call's: the prefill-only calls get it too), and every decode step runs the
    same shapes over it (queries of one token against all max_length - 1 cache slots): its first steps warm what
    all of them use, but for the last step of a full generate, where the 2-D mask covers the whole cache and
    transformers hands SDPA no mask (one attention call per layer, its kernel loaded on first use). The stopping
    criterion is the warm-up's alone; the timed calls are as before."""
    mask = torch.ones_like(ids)
    kw = dict(
        attention_mask=mask,
        do_sample=False,
        cache_implementation="static",
        disable_compile=not compile,
        pad_token_id=0,
        eos_token_id=None,
        return_dict_in_generate=False,
    )
    out = None

    def run(n: int, **extra: Any) -> None:
        nonlocal out
        out = model.generate(ids, max_new_tokens=n, min_new_tokens=n, **kw, **extra)

    short = warm_tokens is not None and warm_tokens < new_tokens and not compile
    with torch.no_grad():
        if short:  # warm-up: cuBLAS heuristics, allocator, static cache of the timed size
            run(new_tokens, stopping_criteria=stop_at(torch, transformers, ids.shape[1] + warm_tokens))
        else:
            run(new_tokens)  # warm-up: cuBLAS heuristics, allocator, (compile if asked)
        if compile:
            run(new_tokens)
        torch.cuda.synchronize()
        prefill = event_ms(torch, lambda: run(1), reps)
        total = event_ms(torch, lambda: run(new_tokens), reps)
    assert out is not None
    how = "transformers generate (greedy, cache_implementation='static', " + (
        "automatic torch.compile: mode 'reduce-overhead', CUDA graphs)" if compile else "disable_compile=True: eager)"
    )
    if short:
        how += (
            f", warmed by one generate of the same call stopped after {warm_tokens} new tokens (a StoppingCriteria: "
            "the same static cache, and each decode step of the same shapes)"
        )
    return GenTiming(total, prefill, out[:, ids.shape[1] :], how)


class GraphDecoder:
    """Prefill eager, then each decode step replayed from one CUDA graph over a static cache."""

    def __init__(self, torch: Any, transformers: Any, model: Any, ids: Any, new_tokens: int):
        self.torch, self.model, self.ids, self.new = torch, model, ids, new_tokens
        b, p = ids.shape
        self.length = p + new_tokens
        dev = ids.device
        self.cache = transformers.StaticCache(config=model.config, max_cache_len=self.length)
        self.pos = torch.zeros((), dtype=torch.long, device=dev)  # position of the token fed next
        self.idx = torch.zeros((), dtype=torch.long, device=dev)  # column of `tokens` written next
        self.ar = torch.arange(self.length, device=dev)
        self.cur = torch.zeros((b, 1), dtype=torch.long, device=dev)
        self.tokens = torch.zeros((b, new_tokens), dtype=torch.long, device=dev)
        self.graph: Any = None

    def _prefill(self) -> None:
        b, p = self.ids.shape
        out = self.model(input_ids=self.ids, past_key_values=self.cache, use_cache=True, logits_to_keep=1)
        first = out.logits[:, -1].argmax(-1)
        self.tokens[:, 0] = first
        self.cur.copy_(first.view(b, 1))
        self.pos.fill_(p)
        self.idx.fill_(0)
        del out

    def _step(self) -> None:
        b = self.ids.shape[0]
        pos_ids = self.pos.view(1, 1).expand(b, 1)
        mask = (self.ar <= self.pos).view(1, 1, 1, self.length).expand(b, 1, 1, self.length)  # True = attend
        out = self.model(
            input_ids=self.cur, position_ids=pos_ids, attention_mask=mask, past_key_values=self.cache, use_cache=True
        )
        nxt = out.logits[:, -1].argmax(-1)
        self.cur.copy_(nxt.view(b, 1))
        self.pos.add_(1)
        self.idx.add_(1)
        self.tokens.index_copy_(1, self.idx.view(1), nxt.view(b, 1))

    def run_eager(self) -> None:
        self.cache.reset()
        self._prefill()
        for _ in range(self.new - 1):
            self._step()

    def capture(self) -> str | None:
        """Capture one decode step; None on success, else why not (the caller records n/a)."""
        t = self.torch
        with t.no_grad():
            self.cache.reset()
            self._prefill()
            side = t.cuda.Stream()
            side.wait_stream(t.cuda.current_stream())
            with t.cuda.stream(side):
                self._step()  # warm-up on a side stream, as capture requires
            t.cuda.current_stream().wait_stream(side)
            t.cuda.synchronize()
            g = t.cuda.CUDAGraph()
            try:
                with t.cuda.graph(g):
                    self._step()
            except Exception as e:  # noqa: BLE001
                t.cuda.synchronize()
                return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        self.graph = g
        return None

    def run_graph(self, steps: int | None = None) -> None:
        """Prefill, then `steps` replays of the decode step (None: all new - 1)."""
        self._prefill()
        for _ in range(self.new - 1 if steps is None else steps):
            self.graph.replay()

    def _timed(self, fn: Any, reps: int) -> list[float]:
        """ms of fn per repetition; the cache is zeroed before each, outside the timed span."""
        t, out = self.torch, []
        for _ in range(reps):
            self.cache.reset()
            out += event_ms(t, fn, 1)
        return out

    def time(self, reps: int, warm_steps: int | None = None) -> GenTiming:
        """`reps` timed prefills and decodes after one warm decode of `warm_steps` replays (None: a whole one).
        Every replay is the same graph over the same buffers (the position and mask in device tensors), so a few
        warm it (its first replay uploads it) as well as all of them."""
        t = self.torch
        with t.no_grad():
            self.cache.reset()
            self.run_graph(warm_steps)  # warm
            t.cuda.synchronize()
            prefill = self._timed(self._prefill, reps)
            total = self._timed(self.run_graph, reps)
        warm = "" if warm_steps is None else f"; warmed by a prefill and {warm_steps} replays"
        return GenTiming(
            total,
            prefill,
            self.tokens.clone(),
            "eager prefill + one CUDA graph per decode step, "
            f"replayed {self.new - 1} times (static cache, position and mask in device tensors){warm}",
        )

    def release(self) -> None:
        self.graph = None
        self.cache = None


def teacher_forced_gap(torch: Any, model: Any, ids: Any, tokens: Any) -> tuple[float, float]:
    """One full forward over prompt + generated tokens: (share of generated tokens that are the
    argmax of their logits, largest gap max-logit - logit[token] in units of the logits' std)."""
    b, p = ids.shape
    seq = torch.cat([ids, tokens[:, :-1]], dim=1)
    with torch.no_grad():
        logits = model(input_ids=seq, use_cache=False).logits[:, p - 1 :].float()  # predicts tokens[:, j]
    top = logits.max(-1).values
    mine = logits.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    std = logits.std(-1)
    gap = ((top - mine) / std).max().item()
    exact = (logits.argmax(-1) == tokens).float().mean().item()
    del logits
    return exact, gap
