"""The GPU path of olacore, checked and timed in one run: ``make gpu-check``.

On a machine with CUDA, in one go (about 8 minutes on one large GPU):

1. the suite's CUDA tests (``pytest -m cuda``): OLA, rollout, SSIM, extraction and one TOA
   adapter training step on CUDA equal the CPU's results;
2. benchmarks at paper scale: the OLA recurrence against enumeration and against its bare
   products at N=28, K=3, T=512, batch 16; ``pairwise_ssim`` for 1,000 x 1,000 maps of 50 x 50;
   attention extraction (tokens per second) for the five zoo models;
3. the retrieval chapter at the default profile (one proxy seed) with ``device=cuda`` in a
   fresh tensor cache, its recorded numbers compared with a CPU run's (``--cpu-results``: the
   chapter's ``results/03_retrieval.json`` from a CPU build, default ``book/generated``).

Everything measured goes into one JSON report (``--out``, default ``gpu-check.json``) with
the GPU's name and the date. Without CUDA the same command runs the CPU parts at a small size,
says in one line that CUDA is absent, writes the report and exits 0.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def cuda_tests(report: dict) -> None:
    """``pytest -m cuda``: its exit status and summary line."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "cuda", "tests/"], cwd=ROOT,
                          capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    report["cuda_tests"] = {"exit_status": done.returncode, "summary": lines[-1] if lines else "",
                            "seconds": round(time.perf_counter() - start, 1)}


def ola_benchmark(report: dict, device: str, full: bool) -> None:
    """Recurrence vs enumeration vs bare products (paper scale on a GPU, small on a CPU)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from measure import time_ola  # benchmarks/measure.py

    size, layers, batch = (512, 28, 16) if full else (64, 12, 4)
    timing = time_ola(num_layers=layers, max_order=3, size=size, batch=batch, repeats=3, device=device)
    report["ola"] = {"N": layers, "K": 3, "T": size, "batch": batch, "device": device,
                     "recurrence_ms": 1e3 * timing.recurrence_s, "enumeration_ms": 1e3 * timing.bruteforce_s,
                     "bare_products_ms": 1e3 * timing.bare_products_s,
                     "speedup_over_enumeration": timing.speedup_over_bruteforce,
                     "recurrence_over_bare_products": timing.overhead_over_bare_products}


def ssim_benchmark(report: dict, device: str, full: bool) -> None:
    """``pairwise_ssim`` throughput for Q x G maps of 50 x 50 (float32)."""
    from olacore.similarity import pairwise_ssim

    count = 1000 if full else 50
    generator = torch.Generator().manual_seed(0)
    queries = (torch.rand(count, 50, 50, generator=generator) ** 4).to(device)
    gallery = (torch.rand(count, 50, 50, generator=generator) ** 4).to(device)
    pairwise_ssim(queries[:4], gallery[:4], 1.0)  # warm-up
    _synchronise(device)
    start = time.perf_counter()
    pairwise_ssim(queries, gallery, 1.0, max_pairs_per_chunk=10_000 if device == "cuda" else 100)
    _synchronise(device)
    seconds = time.perf_counter() - start
    report["ssim"] = {"queries": count, "gallery": count, "size": 50, "device": device, "seconds": seconds,
                      "microseconds_per_pair": 1e6 * seconds / count**2}


def extraction_benchmark(report: dict, device: str, full: bool) -> None:
    """Tokens per second of attention extraction for the zoo models."""
    from olacore.extraction import extract_attention
    from olacore.loading import load_model
    from olacore.profiles import CAUSAL_ZOO, ENCODER_ZOO
    from olacore.texts import similarity_texts

    texts = [t.text for t in similarity_texts(64 if full else 4)]
    rows = {}
    for name in (CAUSAL_ZOO + ENCODER_ZOO if full else ("minilm-l6",)):
        model = load_model(name, device=device)
        extract_attention(model, texts[:2], progress=False)
        _synchronise(device)
        start = time.perf_counter()
        results = extract_attention(model, texts, progress=False)
        _synchronise(device)
        seconds = time.perf_counter() - start
        rows[name] = {"tokens_per_second": sum(len(r.tokens) for r in results) / seconds, "texts": len(texts)}
        del model
    report["extraction"] = {"device": device, "models": rows}


def chapter_on_cuda(report: dict, cpu_results: Path) -> None:
    """Chapter 03 (retrieval) at default with device=cuda in a fresh tensor cache; its numbers against a CPU run's."""
    from olacore.settings import cache_dir

    with tempfile.TemporaryDirectory() as scratch:
        cache = Path(scratch) / "cache"
        cache.mkdir()
        (cache / "models").symlink_to(cache_dir("models"))  # the dequantised models: no rebuild
        out = Path(scratch) / "out"
        env = dict(os.environ, OLACORE_CACHE=str(cache))
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "scripts/execute_notebooks.py", "--profile", "default", "--force",
                               "--out", str(out), "-p", "device", "cuda", "-p", "seeds", "[0]",
                               "notebooks/03_retrieval.py"], cwd=ROOT, env=env, capture_output=True, text=True)
        entry = {"exit_status": done.returncode, "seconds": round(time.perf_counter() - start, 1)}
        if done.returncode != 0:
            entry["error"] = (done.stdout + done.stderr)[-2000:]
        elif not cpu_results.is_file():
            entry["comparison"] = f"no CPU results at {cpu_results}: build the book on a CPU first"
        else:
            gpu = {r["key"]: r["value"] for r in json.loads((out / "results" / "03_retrieval.json").read_text())["records"]}
            cpu = {r["key"]: r["value"] for r in json.loads(cpu_results.read_text())["records"]}
            rows = {key: {"cpu": cpu[key], "cuda": gpu[key], "difference": gpu[key] - cpu[key]}
                    for key in sorted(set(cpu) & set(gpu)) if key.startswith("retrieval/")}
            entry["retrieval"] = rows
            entry["identical"] = sorted(k for k, r in rows.items() if r["difference"] == 0)
            entry["different"] = sorted(k for k, r in rows.items() if r["difference"] != 0)
        report["chapter_03_cuda"] = entry


def _synchronise(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "gpu-check.json", help="the JSON report")
    parser.add_argument("--cpu-results", type=Path, default=ROOT / "book" / "generated" / "results" / "03_retrieval.json")
    parser.add_argument("--skip-chapter", action="store_true", help="leave out the chapter run (part 3)")
    args = parser.parse_args(argv)
    has_cuda = torch.cuda.is_available()
    device = "cuda" if has_cuda else "cpu"
    report: dict = {"date": datetime.date.today().isoformat(), "torch": torch.__version__,
                    "host": platform.node(), "cuda": has_cuda,
                    "gpu": torch.cuda.get_device_name(0) if has_cuda else None}
    if not has_cuda:
        print("CUDA is absent: running the CPU parts at a small size; the CUDA tests are skipped.")
    torch.set_num_threads(max(1, min(os.cpu_count() or 1, 16)))
    parts = [("CUDA tests", lambda: cuda_tests(report)),
             ("OLA benchmark", lambda: ola_benchmark(report, device, has_cuda)),
             ("SSIM benchmark", lambda: ssim_benchmark(report, device, has_cuda)),
             ("extraction benchmark", lambda: extraction_benchmark(report, device, has_cuda))]
    if has_cuda and not args.skip_chapter:
        parts.append(("chapter 03 on CUDA", lambda: chapter_on_cuda(report, args.cpu_results)))
    for name, part in parts:
        start = time.perf_counter()
        part()
        print(f"[gpu-check] {name}: {time.perf_counter() - start:.1f} s", flush=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"[gpu-check] report: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
