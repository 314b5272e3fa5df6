"""How much Other roads' re-check moves between CPU kernels and thread counts.

Scores the base model of every encoding at 16L, as
``posenc.experiments.roads_recheck`` does for its sample (passkey chunk 0, the first text
window of each protocol), from the committed seed-0 checkpoints, once per
(ATEN_CPU_CAPABILITY, threads) in a fresh process. Prints the largest relative change of
a passkey chunk's summed loss, the largest change of any answer logit between runs, and
the largest |fresh - stored| of a text window's loss (nats, stored rounding included).
``ROADS_MEASURED_DRIFT`` records them; the page tolerates ten times them.

    .venv/bin/python scripts/measure_roads_drift.py [--dir book/data/other_roads]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from measure_context_extension_drift import kernel_runs  # same folder


def worker(root: Path, out: Path) -> None:
    import json

    import torch

    from posenc.experiments.roads_config import ROADS, TASKS
    from posenc.experiments.roads_recheck import recheck_roads

    rows = recheck_roads(root, tuple((task, name) for task in TASKS for name in ROADS))
    out.write_text(
        json.dumps(
            {
                "capability": torch.backends.cpu.get_cpu_capability(),
                "threads": torch.get_num_threads(),
                "loss": max(r["loss_change"] for r in rows if r["task"] == "passkey"),
                "text": max(r["change"] for r in rows if r["task"] == "text"),
                "logits": [
                    r["logits"].tolist() for r in rows if r["task"] == "passkey"
                ],
            }
        ),
        encoding="utf-8",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("book/data/other_roads"))
    parser.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.dir, args.worker)
        return 0
    reference, largest = None, {"loss": 0.0, "logit": 0.0, "text": 0.0}
    for run in kernel_runs([sys.executable, __file__, "--dir", str(args.dir)]):
        logits = np.array(run["logits"])
        reference = logits if reference is None else reference
        logit = float(np.max(np.abs(logits - reference)))
        print(
            f"{run['capability']:8s} {run['threads']} threads: loss {run['loss']:.3g} "
            f"(relative), logit {logit:.3g}, text {run['text']:.3g} nats"
        )
        for key, value in (
            ("loss", run["loss"]),
            ("logit", logit),
            ("text", run["text"]),
        ):
            largest[key] = max(largest[key], value)
    print("largest: " + ", ".join(f"{k} {v:.3g}" for k, v in largest.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
