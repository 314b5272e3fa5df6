""" "Other roads"' command line. Imports torch.

::

    python -m posenc.experiments.roads_cli plan                 # the runs and their cost
    python -m posenc.experiments.roads_cli all --worker 0 --workers 2   # half of them
    python -m posenc.experiments.roads_cli train --tasks text --encodings alibi --seeds 0
    python -m posenc.experiments.roads_cli evaluate --tasks passkey
    python -m posenc.experiments.roads_cli all --seeds 3 --worker 0 --workers 2  # holdout

A job is one (task, encoding, seed): ``train`` trains it, ``evaluate`` scores it, ``all``
does both, job after job, so a finished job's results are on disk. RoPE on text is
never trained (its runs are "Real text"'s), only evaluated. A holdout seed
(``HOLDOUT_SEEDS``) trains and scores the base model only. ``--worker i --workers n`` runs
the i-th of n shares, balanced by projected cost: start n processes, one per core. The
default folder, ``book/data/other_roads``, is relative to the current directory.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from posenc.experiments.roads_config import (
    ROADS,
    ROADS_DIR,
    ROADS_SEEDS,
    TASKS,
    is_reused,
    jobs_of,
    plan_note,
    projected_seconds,
    worker_jobs,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m posenc.experiments.roads_cli",
        description="Other roads: chapter 6's model with each position encoding, "
        "trained at L on the passkey task and on the King James Bible, three seeds, "
        "scored at 1L-16L. " + plan_note(),
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (
        ("plan", "print the jobs of each worker and their projected minutes"),
        ("train", "train the jobs (RoPE on text: Real text's stored runs, skipped)"),
        ("evaluate", "score the trained jobs; write results.json per job"),
        ("all", "train and score, job after job"),
    ):
        command = commands.add_parser(name, help=help_text, description=help_text)
        command.add_argument(
            "--dir",
            type=Path,
            default=ROADS_DIR,
            help=f"runs (default {ROADS_DIR}, from the current directory)",
        )
        command.add_argument(
            "--tasks", nargs="+", choices=TASKS, default=list(TASKS), help="tasks"
        )
        command.add_argument(
            "--encodings",
            nargs="+",
            choices=ROADS,
            default=list(ROADS),
            help="encodings (default all)",
        )
        command.add_argument(
            "--seeds",
            type=int,
            nargs="+",
            default=list(ROADS_SEEDS),
            help=f"seeds (default {' '.join(map(str, ROADS_SEEDS))})",
        )
        command.add_argument(
            "--worker", type=int, default=0, help="this process's share (default 0)"
        )
        command.add_argument(
            "--workers", type=int, default=1, help="how many shares (default 1)"
        )
        command.add_argument(
            "--threads", type=int, default=1, help="torch threads (default 1)"
        )
    return parser


def _run(command: str, root: Path, task: str, name: str, seed: int) -> None:
    if task == "passkey":
        from posenc.experiments.roads_passkey import (
            evaluate_passkey_road as evaluate,
        )
        from posenc.experiments.roads_passkey import train_passkey_road as train
    else:
        from posenc.experiments.roads_text import evaluate_text_road as evaluate
        from posenc.experiments.roads_text import train_text_road as train
    if command in ("train", "all") and not is_reused(task, name):
        train(root, name, seed)
    if command in ("evaluate", "all"):
        evaluate(root, name, seed)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    jobs = worker_jobs(
        args.worker,
        args.workers,
        jobs_of(tuple(args.tasks), tuple(args.encodings), tuple(args.seeds)),
    )
    if args.command == "plan":
        for task, name, seed in jobs:
            print(
                f"{task:8s} {name:11s} seed {seed}: at most "
                f"{projected_seconds(task, name) / 60:5.1f} min"
            )
        total = sum(projected_seconds(task, name) for task, name, _ in jobs)
        print(f"worker {args.worker} of {args.workers}: at most {total / 60:.0f} min")
        return 0
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    for task, name, seed in jobs:
        _run(args.command, args.dir, task, name, seed)
    print(f"{args.command}: {len(jobs)} jobs in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
