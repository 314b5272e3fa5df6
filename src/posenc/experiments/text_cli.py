"""The real-text experiment's command line. Imports torch.

::

    python -m posenc.experiments.text_cli train     # per seed: base model, PI and YaRN fine-tunes
    python -m posenc.experiments.text_cli evaluate  # every method, 1L..16L, both protocols
    python -m posenc.experiments.text_cli all       # both

The default folder, ``book/data/real_text``, is relative to the current working directory.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from posenc.experiments.config import seed_dir
from posenc.experiments.text_config import TEXT_DIR, TEXT_RESULTS, TEXT_SEEDS
from posenc.experiments.text_runs import train_text_seeds

#: Measured on this project's 2-core machine; shown by ``--help``.
TRAIN_TIME_NOTE = (
    "40 min measured for the five default seeds on a shared 2-core machine, 1 thread"
)
EVAL_TIME_NOTE = "18.5 min measured for five seeds, 1 thread"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m posenc.experiments.text_cli",
        description="Train byte-level RoPE language models on the King James Bible at L bytes "
        "(one per seed), then score every RoPE scaling method at 1L-16L.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (
        (
            "train",
            f"train the base models and their PI and YaRN fine-tunes ({TRAIN_TIME_NOTE})",
        ),
        (
            "evaluate",
            f"score every trained seed; write seed_*/{TEXT_RESULTS} ({EVAL_TIME_NOTE})",
        ),
        ("all", "train, then evaluate"),
    ):
        command = commands.add_parser(name, help=help_text, description=help_text)
        command.add_argument(
            "--dir",
            type=Path,
            default=TEXT_DIR,
            help=f"checkpoints and results (default {TEXT_DIR}, from the current directory)",
        )
        command.add_argument(
            "--seeds",
            type=int,
            nargs="+",
            default=list(TEXT_SEEDS),
            help=f"seeds (default {' '.join(map(str, TEXT_SEEDS))}, the book's runs)",
        )
        command.add_argument(
            "--threads", type=int, default=1, help="torch threads (default 1)"
        )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.command in ("train", "all"):
        start = time.perf_counter()
        train_text_seeds(args.dir, args.seeds)
        print(
            f"trained {len(args.seeds)} seeds in {time.perf_counter() - start:.0f} s; wrote {args.dir}"
        )
    if args.command in ("evaluate", "all"):
        from posenc.experiments.text_evaluation import (
            evaluate_text_seed,
            write_text_results,
        )

        start = time.perf_counter()
        for seed in args.seeds:
            write_text_results(
                seed_dir(args.dir, seed), evaluate_text_seed(seed_dir(args.dir, seed))
            )
        print(
            f"evaluated {len(args.seeds)} seeds in {time.perf_counter() - start:.0f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
