"""How much the context-extension evaluation moves between CPU kernels and thread counts.

torch picks its CPU kernels per processor; ``ATEN_CPU_CAPABILITY`` forces a family (default,
avx2, avx512 where the processor has it) and the thread count changes how sums are split.
This script evaluates the settings that chapter 6 re-checks, on chunk 0 of every stored seed,
once per (capability, threads) in a fresh process, and prints the largest relative change of
the summed loss and entropy, the largest change of any logit, and the smallest top-2 logit gap
among answers whose correctness changed. ``posenc.experiments.recheck`` sets its
tolerances from these numbers (ten times them).

    .venv/bin/python scripts/measure_context_extension_drift.py [--dir book/data/context_extension]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def capabilities() -> list[str]:
    """The ATEN_CPU_CAPABILITY values this processor can run."""
    flags = (
        Path("/proc/cpuinfo").read_text(encoding="utf-8")
        if Path("/proc/cpuinfo").exists()
        else ""
    )
    found = ["default"]
    if " avx2" in flags:
        found.append("avx2")
    if (
        " avx512f" in flags
        and " avx512bw" in flags
        and " avx512vl" in flags
        and " avx512dq" in flags
    ):
        found.append("avx512")
    return found


def kernel_runs(command: list[str]):
    """Run ``command --worker OUT`` once per (capability, threads) in a fresh process, each
    under ``ATEN_CPU_CAPABILITY`` and that many threads; yield each OUT's JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        for capability, threads in itertools.product(capabilities(), (1, 2)):
            out = Path(tmp) / f"{capability}_{threads}.json"
            env = {
                **os.environ,
                "ATEN_CPU_CAPABILITY": capability,
                "OMP_NUM_THREADS": str(threads),
                "MKL_NUM_THREADS": str(threads),
            }
            subprocess.run([*command, "--worker", str(out)], env=env, check=True)
            yield json.loads(out.read_text(encoding="utf-8"))


def worker(root: Path, out: Path) -> None:
    import torch

    from posenc.experiments import context_extension as ce

    records = []
    for seed in ce.seeds_in(root):
        directory = ce.seed_dir(root, seed)
        results = ce.read_results(directory)
        train_config, eval_config = ce.configs_of(results)
        for setting in ce.RECHECK_SETTINGS:
            model = ce.load_checkpoint(ce.checkpoint_path(directory, setting["model"]))
            rope = ce.rope_spec(
                setting["method"], setting["factor"], train_config.train_length
            )
            batch = ce.eval_batch(train_config.task, eval_config, setting["length"], 0)
            with torch.inference_mode():
                capture = None if rope.method == "dynamic" else []
                logits = ce.answer_logits(model, batch, rope, capture)
                entropy = (
                    []
                    if capture is None
                    else [float(x.sum()) for x in ce.answer_entropy(capture, batch)]
                )
                records.append(
                    {
                        "seed": seed,
                        **setting,
                        "loss_sum": float(ce.answer_loss(logits, batch, "sum")),
                        "entropy_sum": entropy,
                        "logits": logits.double().numpy().tolist(),
                        "targets": batch.targets.tolist(),
                    }
                )
    out.write_text(
        json.dumps(
            {
                "capability": torch.backends.cpu.get_cpu_capability(),
                "threads": torch.get_num_threads(),
                "records": records,
            }
        ),
        encoding="utf-8",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("book/data/context_extension"))
    parser.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.dir, args.worker)
        return 0
    runs = []
    for run in kernel_runs([sys.executable, __file__, "--dir", str(args.dir)]):
        runs.append(run)
        print(
            f"ran with capability {run['capability']}, {run['threads']} threads",
            flush=True,
        )
    from posenc.experiments import context_extension as ce

    reference = runs[0]["records"]
    loss = entropy = logit = 0.0
    flipped_gaps = []
    for run in runs[1:]:
        for ref, rec in zip(reference, run["records"]):
            loss = max(loss, ce.relative_change(rec["loss_sum"], ref["loss_sum"]))
            if ref["entropy_sum"]:
                entropy = max(
                    entropy, ce.relative_change(rec["entropy_sum"], ref["entropy_sum"])
                )
            a, b = np.array(ref["logits"]), np.array(rec["logits"])
            logit = max(logit, float(np.abs(a - b).max()))
            changed = a.argmax(-1) != b.argmax(-1)
            top2 = np.sort(a, axis=-1)[..., -2:]
            flipped_gaps += (top2[..., 1] - top2[..., 0])[changed].tolist()
    answers = sum(np.array(r["targets"]).size for r in reference)
    print(
        json.dumps(
            {
                "configurations": [f"{r['capability']}/{r['threads']}" for r in runs],
                "answers_per_configuration": answers,
                "largest_relative_loss_change": loss,
                "largest_relative_entropy_change": entropy,
                "largest_logit_change": logit,
                "answers_whose_argmax_changed": len(flipped_gaps),
                "largest_top2_gap_among_them": max(flipped_gaps, default=0.0),
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
