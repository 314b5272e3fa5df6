"""Time RoPE side by side and print ratios: ``make bench`` (never run by the tests).

Every comparison runs in one process: the candidates are called in turn, round after
round (posenc.bench.clock.time_alternating), and the medians over the rounds are divided
by the median of the memory floor ``x * 2.0`` timed in the same rounds. On a shared
machine absolute times drift; ratios measured side by side are what this script reports.

    python benchmarks/rope.py [--rounds 15] [--threads 2] [--output results.json]

Where the memory of a result comes from matters as much as the arithmetic. With glibc's
default malloc a freed block of 32 MiB or more goes back to the operating system, and
the next one arrives as fresh pages that fault on first touch; smaller blocks are
recycled. Which one a call gets depends on what ran before it. The main comparison
therefore runs twice: with the default allocator, and after ``mallopt`` tells glibc to
keep and recycle every freed block ("recycled memory", Linux with glibc only), where the
floor is the bandwidth of memory alone.

Sections: (1) float32 (4, 16, 1024, 128), default allocator, 2 threads and 1 thread;
(2) the same with recycled memory; (3) forward + backward with autograd; (4) a sweep over
the head dimension and (5) over the sequence length, recycled memory, one thread.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

import posenc
from posenc.bench import clock
from posenc.bench import forms as rope_forms
from posenc.rope import rotate_pairs_elementwise
from posenc.torch_rope import RotaryEmbedding

MAIN_SHAPE = (4, 16, 1024, 128)
SWEEP_DIMS = (16, 32, 64, 128, 256)
SWEEP_DIM_SHAPE = (1, 32, 512)  # (batch, heads, seq); dim varies
SWEEP_LENGTHS = (512, 1024, 2048, 4096, 8192)
SWEEP_LENGTH_SHAPE = (1, 8, 64)  # (batch, heads, dim); seq varies
GOALS = {  # issue 22: at most these multiples of the floor, at least this much faster
    "interleaved_vs_floor": 1.1,
    "half_vs_floor": 1.5,
    "speedup_vs_transformers": 3.0,
}
FLOOR = "x * 2.0 (memory floor)"
HF = "transformers q*cos + rotate_half(q)*sin"


def recycle_freed_memory() -> bool:
    """Ask glibc to keep every freed block for reuse (no mmap, no trimming). False where impossible."""
    name = ctypes.util.find_library("c")
    if not sys.platform.startswith("linux") or name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        m_trim_threshold, m_mmap_max = -1, -4
        return (
            libc.mallopt(m_mmap_max, 0) == 1
            and libc.mallopt(m_trim_threshold, 1 << 40) == 1
        )
    except (OSError, AttributeError):
        return False


def forms(x: torch.Tensor, *, with_matrices: bool = True) -> dict[str, object]:
    """The candidates for one input, with every table (cos/sin, rotors, matrices) built beforehand."""
    seq, dim = x.shape[-2], x.shape[-1]
    positions = np.arange(seq)
    cos, sin = rope_forms.cos_sin_tables(positions, dim)
    hf_cos, hf_sin = rope_forms.transformers_cos_sin(positions, dim)
    rotors = rope_forms.rotor_table(positions, dim)
    cached = {
        layout: RotaryEmbedding(dim, layout=layout, max_positions=seq)
        for layout in ("interleaved", "half")
    }
    out = torch.empty_like(x)
    candidates = {
        FLOOR: lambda: rope_forms.memory_floor(x),
        "x * 2.0 into an existing tensor": lambda: torch.mul(x, 2.0, out=out),
        "apply_rope interleaved": lambda: posenc.apply_rope(x, positions),
        "apply_rope half": lambda: posenc.apply_rope(x, positions, layout="half"),
        "RotaryEmbedding interleaved (cached)": lambda: cached["interleaved"].rotate(x),
        "RotaryEmbedding half (cached)": lambda: cached["half"].rotate(x),
        HF: lambda: rope_forms.transformers_formula(x, hf_cos, hf_sin),
        "elementwise formula, interleaved": lambda: rotate_pairs_elementwise(
            x, cos, sin, "interleaved"
        ),
        "elementwise formula, half": lambda: rotate_pairs_elementwise(
            x, cos, sin, "half"
        ),
        "complex form (Meta), interleaved": lambda: rope_forms.rotate_complex(
            x, rotors
        ),
    }
    if with_matrices:
        matrices = rope_forms.rope_matrices(positions, dim)
        candidates["block-diagonal matrices, interleaved"] = lambda: (
            rope_forms.rotate_by_matrices(x, matrices)
        )
    return candidates


def check_forms(x: torch.Tensor, candidates: dict[str, object]) -> dict[str, float]:
    """Largest |difference| of every form from the float64 numpy reference, in its layout."""
    positions = np.arange(x.shape[-2])
    x64 = x.double().numpy()
    reference = {
        "interleaved": posenc.apply_rope(x64, positions),
        "half": posenc.apply_rope(x64, positions, layout="half"),
    }
    errors = {}
    for name, function in candidates.items():
        if name.startswith("x * 2.0"):
            continue
        layout = "half" if ("half" in name or name == HF) else "interleaved"
        errors[name] = float(
            np.max(np.abs(function().double().numpy() - reference[layout]))
        )
    return errors


def print_table(title: str, times: dict[str, list[float]]) -> dict[str, float]:
    ratios = clock.median_ratios(times, FLOOR)
    print(f"\n{title}")
    print(f"  {'candidate':42s} {'median ms':>10s} {'x floor':>8s}")
    for name, values in times.items():
        print(
            f"  {name:42s} {statistics.median(values) * 1e3:10.2f} {ratios[name]:8.2f}"
        )
    return ratios


def print_goals(ratios: dict[str, float]) -> dict[str, float]:
    summary = {
        "interleaved_vs_floor": ratios["apply_rope interleaved"],
        "half_vs_floor": ratios["apply_rope half"],
        "transformers_vs_floor": ratios[HF],
        "speedup_interleaved_vs_transformers": ratios[HF]
        / ratios["apply_rope interleaved"],
        "speedup_half_vs_transformers": ratios[HF] / ratios["apply_rope half"],
    }
    lines = [
        (
            "apply_rope interleaved / floor",
            summary["interleaved_vs_floor"],
            "<=",
            GOALS["interleaved_vs_floor"],
        ),
        (
            "apply_rope half / floor",
            summary["half_vs_floor"],
            "<=",
            GOALS["half_vs_floor"],
        ),
        (
            "transformers / apply_rope interleaved",
            summary["speedup_interleaved_vs_transformers"],
            ">=",
            GOALS["speedup_vs_transformers"],
        ),
        (
            "transformers / apply_rope half",
            summary["speedup_half_vs_transformers"],
            ">=",
            GOALS["speedup_vs_transformers"],
        ),
    ]
    print("  goals (issue 22), measured in this run:")
    for label, value, relation, goal in lines:
        met = value <= goal if relation == "<=" else value >= goal
        print(
            f"  {label:42s} {value:6.2f}  (goal {relation} {goal}: {'met' if met else 'NOT met'})"
        )
    return summary


def run_record(
    regime: str, threads: int, rounds: int, times: dict, ratios: dict
) -> dict[str, object]:
    """What one timed comparison stores: its setting, every round's time, medians, ratios."""
    return {
        "shape": list(MAIN_SHAPE),
        "regime": regime,
        "threads": threads,
        "rounds": rounds,
        "times_ms": {k: [t * 1e3 for t in v] for k, v in times.items()},
        "median_ms": {k: statistics.median(v) * 1e3 for k, v in times.items()},
        "ratio_to_floor": ratios,
    }


def main_comparison(
    rounds: int, threads: int, regime: str, *, check: bool = False
) -> dict[str, object]:
    torch.set_num_threads(threads)
    x = torch.randn(*MAIN_SHAPE, generator=torch.Generator().manual_seed(0))
    candidates = forms(x)
    errors = None
    if check:
        errors = check_forms(x, candidates)
        print(
            f"\nlargest |error| against the float64 numpy reference, x float32 {MAIN_SHAPE}:"
        )
        for name, error in errors.items():
            print(f"  {name:42s} {error:.1e}")
    times = clock.time_alternating(candidates, rounds=rounds)
    ratios = print_table(
        f"float32 {MAIN_SHAPE}, {regime} memory, {threads} torch thread(s), {rounds} rounds: "
        "median time and ratio to x * 2.0",
        times,
    )
    summary = print_goals(ratios)
    return {
        **run_record(regime, threads, rounds, times, ratios),
        "max_abs_error": errors,
        "summary": summary,
    }


def autograd_comparison(rounds: int, threads: int, regime: str) -> dict[str, object]:
    torch.set_num_threads(threads)
    x = torch.randn(
        *MAIN_SHAPE, generator=torch.Generator().manual_seed(1)
    ).requires_grad_()
    positions = np.arange(MAIN_SHAPE[-2])
    hf_cos, hf_sin = rope_forms.transformers_cos_sin(positions, MAIN_SHAPE[-1])
    cos, sin = rope_forms.cos_sin_tables(positions, MAIN_SHAPE[-1])
    upstream = torch.randn(*MAIN_SHAPE, generator=torch.Generator().manual_seed(2))

    def forward_backward(function):
        def run():
            function().backward(upstream)
            x.grad = None

        return run

    candidates = {
        FLOOR: forward_backward(lambda: rope_forms.memory_floor(x)),
        "apply_rope interleaved": forward_backward(
            lambda: posenc.apply_rope(x, positions)
        ),
        "apply_rope half": forward_backward(
            lambda: posenc.apply_rope(x, positions, layout="half")
        ),
        HF: forward_backward(
            lambda: rope_forms.transformers_formula(x, hf_cos, hf_sin)
        ),
        "elementwise formula, interleaved": forward_backward(
            lambda: rotate_pairs_elementwise(x, cos, sin, "interleaved")
        ),
    }
    times = clock.time_alternating(candidates, rounds=rounds)
    ratios = print_table(
        f"(3) forward + backward, x float32 {MAIN_SHAPE} requires grad, {regime} memory, "
        f"{threads} torch thread(s), {rounds} rounds",
        times,
    )
    return run_record(regime, threads, rounds, times, ratios)


SHORT_NAMES = {
    FLOOR: "floor",
    "apply_rope interleaved": "apply int.",
    "apply_rope half": "apply half",
    HF: "transformers",
    "elementwise formula, interleaved": "elementwise",
    "complex form (Meta), interleaved": "complex",
    "block-diagonal matrices, interleaved": "matrices",
}


def sweep(
    kind: str, values: tuple[int, ...], rounds: int, threads: int, regime: str
) -> dict[str, object]:
    """Median ms of every form for each head dimension (kind "dim") or sequence length (kind "seq")."""
    torch.set_num_threads(threads)
    result: dict[str, object] = {
        "kind": kind,
        "values": list(values),
        "regime": regime,
        "threads": threads,
        "rounds": rounds,
        "shapes": [],
        "median_ms": {},
        "ratio_to_floor": {},
    }
    if kind == "dim":
        title = f"(4) head dimension sweep, x float32 (batch, heads, seq) = {SWEEP_DIM_SHAPE} by dim"
    else:
        title = f"(5) sequence length sweep, x float32 (batch, heads, dim) = {SWEEP_LENGTH_SHAPE}, seq varies"
    print(
        f"\n{title}, {regime} memory, {threads} torch thread(s), {rounds} rounds: median ms, then ratio to x * 2.0"
    )
    print(
        "  "
        + f"{kind:>6s} "
        + "".join(f"{short:>13s}" for short in SHORT_NAMES.values())
    )
    for value in values:
        if kind == "dim":
            shape = (*SWEEP_DIM_SHAPE, value)
        else:
            shape = (
                SWEEP_LENGTH_SHAPE[0],
                SWEEP_LENGTH_SHAPE[1],
                value,
                SWEEP_LENGTH_SHAPE[2],
            )
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(value))
        candidates = {
            name: function for name, function in forms(x).items() if name in SHORT_NAMES
        }
        times = clock.time_alternating(candidates, rounds=rounds)
        ratios = clock.median_ratios(times, FLOOR)
        result["shapes"].append(list(shape))
        for name in SHORT_NAMES:
            result["median_ms"].setdefault(name, []).append(
                statistics.median(times[name]) * 1e3
            )
            result["ratio_to_floor"].setdefault(name, []).append(ratios[name])
        print(
            "  "
            + f"{value:6d} "
            + "".join(
                f"{statistics.median(times[name]) * 1e3:10.2f} ms"
                for name in SHORT_NAMES
            )
        )
        print(
            "  " + " " * 7 + "".join(f"{ratios[name]:12.2f}x" for name in SHORT_NAMES)
        )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=15, help="timed rounds of each main comparison"
    )
    parser.add_argument(
        "--sweep-rounds", type=int, default=9, help="timed rounds per sweep point"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=2,
        help="torch intra-op threads; each main comparison is repeated with 1 thread",
    )
    parser.add_argument(
        "--output", type=Path, help="also write the results as JSON to this file"
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    machine = clock.machine_description()
    command = "python benchmarks/rope.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    print(f"command: {command.strip()}")
    print(
        f"machine: {machine['cpu']}, {machine['cores']} logical cores; torch {machine['torch']}; "
        f"Python {machine['python']}; load average {machine['load_average']} at the start"
    )
    print("ratios are medians over rounds that call every candidate in turn")
    thread_counts = [args.threads] + ([1] if args.threads != 1 else [])
    results: dict[str, object] = {
        "command": command.strip(),
        "machine": machine,
        "goals": GOALS,
        "main": {"default": {}, "recycled": {}},
    }
    print(
        "\n(1) default allocator: whether a result gets fresh pages depends on what ran before"
    )
    for index, threads in enumerate(thread_counts):
        results["main"]["default"][str(threads)] = main_comparison(
            args.rounds, threads, "default", check=index == 0
        )
    recycled = recycle_freed_memory()
    results["recycled_memory_available"] = recycled
    regime = "recycled" if recycled else "default"
    if recycled:
        print(
            "\n(2) recycled memory (mallopt: no mmap, no trimming): the floor is memory bandwidth alone"
        )
        for threads in thread_counts:
            results["main"]["recycled"][str(threads)] = main_comparison(
                args.rounds, threads, "recycled"
            )
    else:
        print("\n(2) skipped: mallopt is available with glibc on Linux only")
    results["autograd"] = autograd_comparison(
        max(3, args.rounds // 2), args.threads, regime
    )
    print(
        "\nthe sweeps run on one thread, so that waking a second thread (milliseconds on a busy machine) "
        "does not hide how the work grows"
    )
    results["sweep_dim"] = sweep("dim", SWEEP_DIMS, args.sweep_rounds, 1, regime)
    results["sweep_seq"] = sweep("seq", SWEEP_LENGTHS, args.sweep_rounds, 1, regime)
    results["seconds"] = time.perf_counter() - started
    results["load_average_at_end"] = clock.machine_description()["load_average"]
    print(
        f"\ntotal time {results['seconds']:.0f} s, load average {results['load_average_at_end']} at the end"
    )
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(results, indent=1) + "\n")
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
