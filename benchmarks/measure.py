"""Speed against the machine, for ``make bench`` and the scripts of benchmarks/: the OLA recurrence against enumeration
and its bare products (:func:`time_ola`: ``bench_ola.py``, ``scripts/gpu_check.py``; chapter 01 shows its own), and
each phase of the book against this machine's attainable fp32 rate (``bench_phases.py``: :func:`attainable_rate`,
:func:`measure_phase`, the phase units, the table on the compute page, :func:`bench_table`). Ratios and shares are
measured in one run, on the same inputs and thread count; they are reported, never asserted. Not part of the
package: the scripts here import it from this folder.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from olacore.ola import order_level_attention, order_level_attention_bruteforce
from olacore.settings import fixed_threads


@dataclass(frozen=True)
class OLATiming:
    """Seconds per call (best of ``repeats``) for one ``(N, K, T, batch)`` setting."""

    num_layers: int
    max_order: int
    size: int
    batch: int
    recurrence_s: float
    bruteforce_s: float
    bare_products_s: float

    @property
    def speedup_over_bruteforce(self) -> float:
        return self.bruteforce_s / self.recurrence_s

    @property
    def overhead_over_bare_products(self) -> float:
        return self.recurrence_s / self.bare_products_s


def _best_of(repeats: int, function) -> float:
    """The best of ``repeats`` timed calls, after one untimed call that pays the one-time costs (first use of a
    kernel or a shape, the allocator's first blocks): a single timed call would otherwise measure those."""
    function()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def random_row_stochastic(batch: int, num_layers: int, size: int, causal: bool = True,
                          seed: int = 0, dtype=torch.float32, device="cpu") -> torch.Tensor:
    """``(batch, N, T, T)`` random row-stochastic maps (lower-triangular if ``causal``)."""
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, num_layers, size, size, generator=generator, dtype=dtype)
    if causal:
        logits = logits.masked_fill(~torch.ones(size, size, dtype=torch.bool).tril(), float("-inf"))
    return logits.softmax(-1).to(device)


def time_ola(num_layers: int, max_order: int, size: int, batch: int, repeats: int = 3,
             device="cpu") -> OLATiming:
    """Time the recurrence, brute-force enumeration and the ``N * K`` bare products.

    Args:
        num_layers, max_order, size, batch: ``N``, ``K``, ``T`` and the batch of maps.
        repeats: calls per method (enumeration: ``repeats // 3``, at least 1); the best time is kept.
    """
    attn = random_row_stochastic(batch, num_layers, size, device=device)
    recurrence = _best_of(repeats, lambda: order_level_attention(attn, max_order))
    enumeration = _best_of(max(1, repeats // 3), lambda: order_level_attention_bruteforce(attn, max_order))
    operand = attn[:, 0]

    def bare_products():
        out = operand
        for _ in range(num_layers * max_order):
            out = operand @ out
        return out

    bare = _best_of(repeats, bare_products)
    return OLATiming(num_layers, max_order, size, batch, recurrence, enumeration, bare)


# --------------------------------------------------------------------------------------------
# The book's phases against the machine (``make bench``, benchmarks/bench_phases.py)
# --------------------------------------------------------------------------------------------

#: The book's phases, in the order the table lists them.
PHASES = ("extraction", "ALTI", "adapters", "proxy", "zero-shot")


@dataclass(frozen=True)
class PhaseCost:
    """One representative unit of a phase's work, against the machine.

    ``flops``: the matrix-product and convolution FLOPs torch's own counter
    (:class:`torch.utils.flop_counter.FlopCounterMode`) counts in one run of the unit, backward passes included
    (element-wise work, softmax and normalisations are not counted); ``cpu_seconds`` and ``wall_seconds``: the
    best of the timed runs (CPU of this process, one torch thread); ``products_seconds``: those products alone
    (:func:`products_alone_seconds`).
    """

    phase: str
    unit: str
    flops: int
    cpu_seconds: float
    wall_seconds: float
    products_seconds: float = float("nan")

    @property
    def gflops_per_second(self) -> float:
        """Achieved rate: counted GFLOP over CPU seconds."""
        return self.flops / 1e9 / self.cpu_seconds if self.cpu_seconds > 0 else 0.0

    def share(self, attainable: float) -> float:
        """Achieved rate as a share of ``attainable`` GFLOP/s."""
        return self.gflops_per_second / attainable

    @property
    def products_gflops_per_second(self) -> float:
        """The rate the unit's counted products reach alone, at their own shapes."""
        return self.flops / 1e9 / self.products_seconds if self.products_seconds > 0 else float("nan")


def count_flops(function) -> int:
    """FLOPs torch's counter sees in one call of ``function()`` (matrix products, convolutions, attention kernels)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        function()
    return int(counter.get_total_flops())


def counted_products(function) -> list[tuple[object, tuple, dict, int]]:
    """The operations torch's FLOP counter counts in one call of ``function()`` (matrix products, convolutions and
    their backward passes, attention kernels), each distinct call once: ``(op, args, kwargs, times)``, with random
    operands of the recorded shapes, strides and dtypes in place of the real ones."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_map
    from torch.utils.flop_counter import flop_registry

    def layout(x):
        return ("tensor", tuple(x.shape), tuple(x.stride()), x.dtype) if isinstance(x, torch.Tensor) else x

    calls: dict[tuple, list] = {}

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func.overloadpacket in flop_registry:
                operands = tree_map(layout, (args, kwargs))
                calls.setdefault((func, repr(operands)), [func, operands, 0])[2] += 1
            else:  # a composite (linear, matmul under inference mode): its parts come back through this mode
                with self:
                    parts = func.decompose(*args, **kwargs)
                if parts is not NotImplemented:
                    return parts
            return func(*args, **kwargs)

    def is_layout(x):
        return isinstance(x, tuple) and x[:1] == ("tensor",)

    def operand(x):
        if not is_layout(x):
            return x
        _, shape, stride, dtype = x
        extent = 1 + sum((n - 1) * step for n, step in zip(shape, stride)) if all(shape) else 0
        base = torch.randn(extent).to(dtype) if dtype.is_floating_point else torch.zeros(extent, dtype=dtype)
        return base.as_strided(shape, stride)

    with Recorder():
        function()
    return [(func, *tree_map(operand, operands, is_leaf=is_layout), times) for func, operands, times in calls.values()]


def products_alone_seconds(function, repeats: int = 3) -> float:
    """CPU seconds the products counted in one call of ``function()`` take alone, at their own shapes, on one thread
    (:func:`counted_products`: each distinct call the best of ``repeats``, times how often it occurred).

    The counted FLOPs over these seconds is the rate the unit's own products reach on this machine (small matrices
    run far below the 1024^3 rate); the unit's CPU seconds beyond them go to everything else (element-wise work,
    Python, the allocator).
    """
    with fixed_threads(1):
        total = 0.0
        for func, args, kwargs, times in counted_products(function):
            best = float("inf")
            for _ in range(repeats):
                start = time.process_time()
                func(*args, **kwargs)
                best = min(best, time.process_time() - start)
            total += best * times
    return total


def attainable_rate(size: int = 1024, repeats: int = 5) -> float:
    """This machine's attainable fp32 rate on one torch thread, GFLOP/s: ``2 size^3`` FLOPs over the best CPU
    seconds of ``repeats`` ``torch.mm`` of two ``size x size`` float32 matrices, after one untimed call. CPU
    seconds, as the phases are measured: on a shared machine, time spent waiting for a core is not counted.

    Raises:
        ValueError: ``size`` or ``repeats`` below 1.
    """
    if size < 1 or repeats < 1:
        raise ValueError(f"size and repeats must be >= 1; got {size}, {repeats}")
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.randn(size, size, generator=generator) for _ in range(2))
    with fixed_threads(1):
        torch.mm(a, b)
        seconds = float("inf")
        for _ in range(repeats):
            start = time.process_time()
            torch.mm(a, b)
            seconds = min(seconds, time.process_time() - start)
    return 2 * size**3 / max(seconds, 1e-9) / 1e9


def measure_phase(phase: str, unit: str, function, repeats: int = 2) -> PhaseCost:
    """Count ``function()``'s FLOPs in one call (which also pays the one-time costs: first use of a kernel or a
    shape), then time ``repeats`` more calls, CPU and wall, best of each, on one torch thread, and its products alone
    (:func:`products_alone_seconds`, one more call). ``function`` must do the same work each call (its FLOPs are
    counted once).
    """
    with fixed_threads(1):
        flops = count_flops(function)
        cpu = wall = float("inf")
        for _ in range(max(1, repeats)):
            start, start_cpu = time.perf_counter(), time.process_time()
            function()
            cpu = min(cpu, time.process_time() - start_cpu)
            wall = min(wall, time.perf_counter() - start)
    return PhaseCost(phase, unit, flops, cpu, wall, products_alone_seconds(function))


def bench_texts(count: int) -> list[str]:
    """``count`` UD EWT dev sentences spread evenly over the split (:func:`olacore.corpora.evenly_spread`)."""
    from olacore.corpora import evenly_spread, read_ewt_syntax

    return [s.text for s in evenly_spread(read_ewt_syntax("dev").items, count)]


def extraction_units(model_name: str, texts: list[str]) -> list[tuple[str, str, object]]:
    """Extraction and ALTI of ``texts`` with one model: ``(phase, unit, function)`` triples. Extraction twice: one
    text per call, and all in one public call (whatever batching :func:`~olacore.extraction.extract_attention` does)."""
    from olacore.alti import alti
    from olacore.extraction import extract_attention
    from olacore.loading import load_model

    model = load_model(model_name, device="cpu")
    count = f"{len(texts)} EWT sentences"

    def per_text():
        for text in texts:
            extract_attention(model, [text], progress=False)

    return [
        ("extraction", f"{model_name}, {count}, one text per call", per_text),
        ("extraction", f"{model_name}, {count}, one call", lambda: extract_attention(model, texts, progress=False)),
        ("ALTI", f"{model_name}, {count}, one call", lambda: alti(model, texts, progress=False)),
    ]


def adapter_unit(sentences: int, seed: int = 0) -> tuple[str, str, object]:
    """One training epoch of the syntax chapter's default adapter (DP head, order 1+2 raw and clean, word grid) over
    the word counts of the first ``sentences`` EWT train sentences (the chapter trains on the first ones; cut at its
    ``max_tokens``), on random row-stochastic maps: the FLOPs depend on the sizes only."""
    from olacore.profiles import settings
    from olacore.toa.data import InputSpec
    from olacore.toa.model import ToaModel
    from olacore.toa.train import optimiser_for, train_epoch
    from olacore.corpora import read_ewt_syntax

    config = settings("syntax", "default")
    spec, training = InputSpec(), config.training
    lengths = [min(len(s), config.max_tokens or len(s)) for s in read_ewt_syntax("train").items[:sentences]]
    rng = np.random.default_rng(seed)
    inputs = [random_row_stochastic(1, spec.num_channels, n, causal=False, seed=seed + i)[0]
              for i, n in enumerate(lengths)]
    targets = [{"words": np.arange(n), "heads": rng.integers(0, n, n), "rels": rng.integers(0, 40, n)} for n in lengths]
    torch.manual_seed(seed)
    model = ToaModel("dependency", spec.num_channels, 40, config.adapter)
    steps = -(-sentences // training.batch_size)
    optimiser, schedule = optimiser_for(model, training, 10 * steps)

    def epoch():
        train_epoch(model, inputs, targets, optimiser, schedule, training, torch.Generator().manual_seed(seed))

    adapter = config.adapter
    unit = (f"DP adapter (dim {adapter.dim}, depth {adapter.depth}), one epoch: the first {sentences} EWT train sentences "
            f"(mean {np.mean(lengths):.0f} words), {steps} step{'s' * (steps > 1)} of {training.batch_size}")
    return "adapters", unit, epoch


def proxy_unit(steps: int, seed: int = 0) -> tuple[str, str, object]:
    """``steps`` training steps of the quantitative chapter's default proxy (ResNet-18 of its width, its map size,
    orders and batch) on random maps of two source models, with one validation at the end."""
    from dataclasses import replace

    from olacore.profiles import settings
    from olacore.proxy import train_proxy

    config = settings("quantitative", "default")
    proxy = replace(config.proxy, iterations=steps, eval_every=steps)
    shape = (config.proxy_num_texts, config.max_order, config.proxy_size, config.proxy_size)
    sources = [torch.rand(shape, generator=torch.Generator().manual_seed(seed + s)) for s in range(2)]
    unit = (f"ResNet-18 (width {proxy.width}), {steps} steps of {proxy.batch_size} maps "
            f"{config.max_order} x {config.proxy_size} x {config.proxy_size}, one validation")
    return "proxy", unit, lambda: train_proxy(sources, None, proxy, seed=seed, device="cpu", progress=False)


def zero_shot_unit(model_name: str, prompts: int, batch_size: int = 16) -> tuple[str, str, object]:
    """Greedy answers to ``prompts`` SemEval dev RE prompts (spread evenly) with ``model_name``, as chapters 07 and
    a5 decode them (:func:`chapter_code.zeroshot.generate_greedy`: shared prefix once, batches of ``batch_size``).
    Needs ``notebooks/`` on ``sys.path`` (``bench_phases.py`` puts it there)."""
    from olacore.corpora import evenly_spread, read_semeval

    from chapter_code.zeroshot import PROMPTS, build_prompt, generate_greedy, load_generator, prompt_form

    lm = load_generator(model_name, device="cpu")
    form = prompt_form(lm.tokenizer)
    texts = [build_prompt(lm.tokenizer, "re", x, form) for x in evenly_spread(read_semeval("dev").items, prompts)]
    spec = PROMPTS["re"]

    def answer():
        generate_greedy(lm, texts, max_new_tokens=spec.max_new_tokens, add_special_tokens=form == "plain",
                        batch_size=batch_size)

    return "zero-shot", f"{model_name}, {prompts} SemEval RE prompts, greedy, at most {spec.max_new_tokens} tokens", \
        answer


def machine_description() -> str:
    """CPU model and the cores this process may use, e.g. ``"AMD EPYC, 2 cores"`` (:func:`olacore.results.machine`)."""
    from olacore.results import machine

    m = machine()
    return f"{m['cpu']}, {m['cores']} cores"


def bench_table(record: dict) -> str:
    """The MyST Markdown table of a bench record (the JSON ``benchmarks/bench_phases.py`` writes): per unit its phase,
    GFLOP, CPU s, GFLOP/s and share of the attainable rate, under a line and a caption saying what, where and when."""
    attainable = record["attainable_gflops"]
    rows = ["| phase | unit of work | GFLOP | CPU s | GFLOP/s | share of attainable | its products alone, GFLOP/s "
            "| share of its products' rate |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for row in record["rows"]:
        cost = PhaseCost(**row)
        alone = cost.products_gflops_per_second
        rows.append(f"| {cost.phase} | {cost.unit} | {cost.flops / 1e9:,.2f} | {cost.cpu_seconds:.2f} | "
                    f"{cost.gflops_per_second:.1f} | {cost.share(attainable):.0%} | {alone:.1f} | "
                    f"{cost.gflops_per_second / alone:.0%} |")
    note = f" {record['note'].rstrip('.')}." if record.get("note") else ""
    return (
        f"Measured by `make bench` on {record['measured_at']} UTC, on {record['machine']}, torch "
        f"{record['torch']}, one thread, float32 (load average {record['load_average']:.2f} at the start).{note}\n\n"
        ":::{table} Each phase of the book against the machine: one representative unit of its work, the FLOPs "
        "torch's counter finds in it (matrix products and convolutions, backward passes included; element-wise "
        "work not counted), its CPU seconds on one thread (best of "
        f"{record['repeats']}), the achieved rate and its share of the attainable rate, "
        f"{attainable:.1f} GFLOP/s ({record['attainable_how']}); then the rate the same products reach alone, at "
        "their own shapes, on random operands (what the unit would run at if nothing else took time), and the "
        "achieved rate as a share of it.\n"
        ":name: tbl-compute-bench\n\n" + "\n".join(rows) + "\n:::\n"
    )
