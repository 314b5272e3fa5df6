"""The experiment's command line. Imports torch.

::

    python -m posenc.experiments train     # per seed: base model, then three fine-tunes
    python -m posenc.experiments evaluate  # every method at 1x..8x L -> results
    python -m posenc.experiments all       # both
    python -m posenc.experiments compare A B   # two training runs side by side

``python -m posenc.experiments.context_extension`` takes the same commands. The default
folder, ``book/data/context_extension``, is relative to the current working directory.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from posenc.experiments.analysis import read_all_results, write_results, write_summary
from posenc.experiments.config import (
    DEFAULT_DIR,
    DEFAULT_SEEDS,
    RESULTS_FILE,
    SUMMARY_FILE,
    EvalConfig,
    seed_dir,
)
from posenc.experiments.evaluation import evaluate_all
from posenc.experiments.reproducibility import compare_runs
from posenc.experiments.training import train_seeds

#: Measured on this project's 2-core machine; shown by ``--help``.
TRAIN_TIME_NOTE = "15 min measured for the five default seeds on a quiet 2-core machine, 33 min on a shared one"
EVAL_TIME_NOTE = "9 min measured for five seeds, 1 thread"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m posenc.experiments",
        description="Train tiny RoPE models at length L (one per seed), then evaluate every RoPE scaling method at 1x-8x L.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (
        (
            "train",
            f"train the base models and their fine-tunes, one per seed ({TRAIN_TIME_NOTE})",
        ),
        (
            "evaluate",
            f"evaluate every trained seed; write seed_*/results.json and results.csv ({EVAL_TIME_NOTE})",
        ),
        ("all", "train, then evaluate"),
    ):
        command = commands.add_parser(name, help=help_text, description=help_text)
        command.add_argument(
            "--dir",
            type=Path,
            default=DEFAULT_DIR,
            help=f"checkpoints and results (default {DEFAULT_DIR}, from the current directory)",
        )
        command.add_argument(
            "--seeds",
            type=int,
            nargs="+",
            default=list(DEFAULT_SEEDS),
            help=f"seeds to train or evaluate (default {' '.join(map(str, DEFAULT_SEEDS))}, the book's runs)",
        )
        if name in ("train", "all"):
            command.add_argument(
                "--threads",
                type=int,
                default=2,
                help="torch threads for training (default 2)",
            )
        if name in ("evaluate", "all"):
            command.add_argument(
                "--chunks",
                type=int,
                default=EvalConfig.num_chunks,
                help=f"chunks of {EvalConfig.chunk_size} sequences per setting (default {EvalConfig.num_chunks})",
            )
            command.add_argument(
                "--eval-threads",
                type=int,
                default=1,
                help="torch threads for evaluation (default 1, as the book's notebook uses)",
            )
    compare = commands.add_parser(
        "compare",
        help="compare two training runs, seed by seed (bit-identical on one machine)",
    )
    compare.add_argument("first", type=Path)
    compare.add_argument("second", type=Path)
    compare.add_argument(
        "--out",
        type=Path,
        default=None,
        help="also write the comparison to this JSON file",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "compare":
        report = json.dumps(compare_runs(args.first, args.second), indent=1)
        print(report)
        if args.out is not None:
            args.out.write_text(report + "\n", encoding="utf-8")
        return 0
    if args.command in ("train", "all"):
        torch.set_num_threads(args.threads)
        start = time.perf_counter()
        logs = train_seeds(args.dir, args.seeds)
        steps = ", ".join(
            f"seed {log['config']['seed']}: {log['base']['steps']}" for log in logs
        )
        print(
            f"trained {len(logs)} seeds in {time.perf_counter() - start:.0f} s (base steps {steps}); wrote {args.dir}"
        )
    if args.command in ("evaluate", "all"):
        torch.set_num_threads(args.eval_threads)
        start = time.perf_counter()
        for seed in args.seeds:
            write_results(
                seed_dir(args.dir, seed),
                evaluate_all(
                    seed_dir(args.dir, seed), EvalConfig(num_chunks=args.chunks)
                ),
            )
        write_summary(args.dir, read_all_results(args.dir))
        print(
            f"evaluated in {time.perf_counter() - start:.0f} s; wrote {RESULTS_FILE} per seed and {args.dir / SUMMARY_FILE}"
        )
    return 0
