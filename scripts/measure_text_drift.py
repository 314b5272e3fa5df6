"""How much the real-text evaluation moves between CPU kernels and thread counts.

Evaluates the settings the real-text page re-checks
(``posenc.experiments.text_evaluation.TEXT_RECHECK_SETTINGS``) on the first windows of every
stored seed, once per (ATEN_CPU_CAPABILITY, threads) in a fresh process, and prints the
largest |fresh - stored| of a window's mean loss (nats), the stored 6-decimal rounding
included. ``TEXT_MEASURED_DRIFT`` records it; the page tolerates ten times it.

    .venv/bin/python scripts/measure_text_drift.py [--dir book/data/real_text] [--windows 2]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from measure_context_extension_drift import kernel_runs  # same folder


def worker(root: Path, windows: int, out: Path) -> None:
    import torch

    from posenc.experiments.text_claims import read_text_evidence
    from posenc.experiments.text_config import TEXT_RESULTS
    from posenc.experiments.text_evaluation import recheck_text

    changes = []
    for seed in read_text_evidence(root):
        directory = root / f"seed_{seed}"
        results = json.loads((directory / TEXT_RESULTS).read_text(encoding="utf-8"))
        changes += [row["change"] for row in recheck_text(directory, results, windows)]
    out.write_text(
        json.dumps(
            {
                "capability": torch.backends.cpu.get_cpu_capability(),
                "threads": torch.get_num_threads(),
                "largest": max(changes),
            }
        ),
        encoding="utf-8",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("book/data/real_text"))
    parser.add_argument("--windows", type=int, default=2)
    parser.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.dir, args.windows, args.worker)
        return 0
    largest = 0.0
    command = [sys.executable, __file__, "--dir", str(args.dir)]
    for run in kernel_runs([*command, "--windows", str(args.windows)]):
        print(
            f"{run['capability']:8s} {run['threads']} threads: {run['largest']:.3g} nats"
        )
        largest = max(largest, run["largest"])
    print(f"largest change of a window's mean loss: {largest:.3g} nats")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
