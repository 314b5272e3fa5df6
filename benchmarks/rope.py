"""Time RoPE side by side and print ratios: ``make bench`` (never run by the tests).

Every comparison runs in one process: the candidates are called in turn, round after
round (posenc.benchmark.time_alternating), and the medians over the rounds are divided
by the median of the memory floor ``x * 2.0`` timed in the same rounds. On a shared
machine absolute times drift; ratios measured side by side are what this script reports.

    python benchmarks/rope.py [--rounds 15] [--threads 2] [--output results.json]

Sections: (1) float32 (4, 16, 1024, 128): apply_rope in both layouts against the
transformers formula, the elementwise reference formula, the complex form, the
block-diagonal matrices and the floor; (2) the same with autograd (forward + backward);
(3) a sweep over the head dimension and (4) over the sequence length.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

import posenc
from posenc import benchmark as bm
from posenc.rope import rope_angles, rope_inv_freq, rotate_pairs_elementwise

MAIN_SHAPE = (4, 16, 1024, 128)
SWEEP_DIMS = (16, 32, 64, 128, 256)
SWEEP_DIM_SHAPE = (1, 32, 512)  # (batch, heads, seq); dim varies
SWEEP_LENGTHS = (512, 1024, 2048, 4096, 8192)
SWEEP_LENGTH_SHAPE = (1, 8, 64)  # (batch, heads, dim); seq varies
GOALS = {"interleaved_vs_floor": 1.5, "half_vs_floor": 2.0, "speedup_vs_transformers": 2.5}


def forms(x: torch.Tensor, *, with_matrices: bool = True) -> dict[str, object]:
    """The candidates for one input, with every table (cos/sin, rotors, matrices) built beforehand."""
    seq, dim = x.shape[-2], x.shape[-1]
    positions = np.arange(seq)
    angles = rope_angles(positions, rope_inv_freq(dim))
    cos = torch.from_numpy(np.cos(angles).astype(np.float32))
    sin = torch.from_numpy(np.sin(angles).astype(np.float32))
    hf_cos, hf_sin = bm.transformers_cos_sin(positions, dim)
    rotors = bm.complex_rotors(positions, dim)
    out = torch.empty_like(x)
    candidates = {
        "x * 2.0 (memory floor)": lambda: bm.memory_floor(x),
        "x * 2.0 into an existing tensor": lambda: torch.mul(x, 2.0, out=out),
        "apply_rope interleaved": lambda: posenc.apply_rope(x, positions),
        "apply_rope half": lambda: posenc.apply_rope(x, positions, layout="half"),
        "transformers q*cos + rotate_half(q)*sin": lambda: bm.transformers_formula(x, hf_cos, hf_sin),
        "elementwise formula, interleaved": lambda: rotate_pairs_elementwise(x, cos, sin, "interleaved"),
        "elementwise formula, half": lambda: rotate_pairs_elementwise(x, cos, sin, "half"),
        "complex form (Meta), interleaved": lambda: bm.rotate_complex(x, rotors),
    }
    if with_matrices:
        matrices = bm.rope_matrices(positions, dim)
        candidates["block-diagonal matrices, interleaved"] = lambda: bm.rotate_by_matrices(x, matrices)
    return candidates


def check_forms(x: torch.Tensor, candidates: dict[str, object]) -> dict[str, float]:
    """Largest |difference| of every form from the float64 numpy reference, in its layout."""
    positions = np.arange(x.shape[-2])
    x64 = x.double().numpy()
    reference = {"interleaved": posenc.apply_rope(x64, positions),
                 "half": posenc.apply_rope(x64, positions, layout="half")}
    errors = {}
    for name, function in candidates.items():
        if name.startswith("x * 2.0"):
            continue
        layout = "half" if ("half" in name or name.startswith("transformers")) else "interleaved"
        errors[name] = float(np.max(np.abs(function().double().numpy() - reference[layout])))
    return errors


def print_table(title: str, times: dict[str, list[float]], baseline: str) -> dict[str, float]:
    ratios = bm.median_ratios(times, baseline)
    print(f"\n{title}")
    print(f"  {'candidate':42s} {'median ms':>10s} {'x floor':>8s}")
    for name, values in times.items():
        print(f"  {name:42s} {statistics.median(values) * 1e3:10.2f} {ratios[name]:8.2f}")
    return ratios


def main_comparison(rounds: int, threads: int, *, check: bool = True) -> dict[str, object]:
    torch.set_num_threads(threads)
    x = torch.randn(*MAIN_SHAPE, generator=torch.Generator().manual_seed(0))
    candidates = forms(x)
    errors = check_forms(x, candidates) if check else None
    if check:
        print(f"\nlargest |error| against the float64 numpy reference, x float32 {MAIN_SHAPE}:")
        for name, error in errors.items():
            print(f"  {name:42s} {error:.1e}")
    times = bm.time_alternating(candidates, rounds=rounds)
    ratios = print_table(f"(1) float32 {MAIN_SHAPE}, {threads} torch thread(s), {rounds} rounds, "
                         "median time and ratio to x * 2.0", times, "x * 2.0 (memory floor)")
    hf = ratios["transformers q*cos + rotate_half(q)*sin"]
    summary = {
        "interleaved_vs_floor": ratios["apply_rope interleaved"],
        "half_vs_floor": ratios["apply_rope half"],
        "transformers_vs_floor": hf,
        "speedup_interleaved_vs_transformers": hf / ratios["apply_rope interleaved"],
        "speedup_half_vs_transformers": hf / ratios["apply_rope half"],
    }
    print("\n  goals (issue 8), measured in this run:")
    lines = [
        ("apply_rope interleaved / floor", summary["interleaved_vs_floor"], "<=", GOALS["interleaved_vs_floor"]),
        ("apply_rope half / floor", summary["half_vs_floor"], "<=", GOALS["half_vs_floor"]),
        ("transformers / apply_rope interleaved", summary["speedup_interleaved_vs_transformers"], ">=",
         GOALS["speedup_vs_transformers"]),
        ("transformers / apply_rope half", summary["speedup_half_vs_transformers"], ">=",
         GOALS["speedup_vs_transformers"]),
    ]
    for label, value, relation, goal in lines:
        met = value <= goal if relation == "<=" else value >= goal
        print(f"  {label:42s} {value:6.2f}  (goal {relation} {goal}: {'met' if met else 'NOT met'})")
    return {"shape": list(MAIN_SHAPE), "threads": threads, "rounds": rounds, "max_abs_error": errors,
            "times_ms": {k: [t * 1e3 for t in v] for k, v in times.items()},
            "median_ms": {k: statistics.median(v) * 1e3 for k, v in times.items()},
            "ratio_to_floor": ratios, "summary": summary}


def autograd_comparison(rounds: int, threads: int) -> dict[str, object]:
    torch.set_num_threads(threads)
    x = torch.randn(*MAIN_SHAPE, generator=torch.Generator().manual_seed(1)).requires_grad_()
    positions = np.arange(MAIN_SHAPE[-2])
    hf_cos, hf_sin = bm.transformers_cos_sin(positions, MAIN_SHAPE[-1])
    angles = rope_angles(positions, rope_inv_freq(MAIN_SHAPE[-1]))
    cos = torch.from_numpy(np.cos(angles).astype(np.float32))
    sin = torch.from_numpy(np.sin(angles).astype(np.float32))
    upstream = torch.randn(*MAIN_SHAPE, generator=torch.Generator().manual_seed(2))

    def forward_backward(function):
        def run():
            function().backward(upstream)
            x.grad = None
        return run

    candidates = {
        "x * 2.0 (memory floor)": forward_backward(lambda: bm.memory_floor(x)),
        "apply_rope interleaved": forward_backward(lambda: posenc.apply_rope(x, positions)),
        "apply_rope half": forward_backward(lambda: posenc.apply_rope(x, positions, layout="half")),
        "transformers q*cos + rotate_half(q)*sin": forward_backward(
            lambda: bm.transformers_formula(x, hf_cos, hf_sin)),
        "elementwise formula, interleaved": forward_backward(
            lambda: rotate_pairs_elementwise(x, cos, sin, "interleaved")),
    }
    times = bm.time_alternating(candidates, rounds=rounds)
    ratios = print_table(f"(2) forward + backward, x float32 {MAIN_SHAPE} requires grad, {threads} torch "
                         f"thread(s), {rounds} rounds", times, "x * 2.0 (memory floor)")
    return {"shape": list(MAIN_SHAPE), "threads": threads, "rounds": rounds,
            "times_ms": {k: [t * 1e3 for t in v] for k, v in times.items()},
            "median_ms": {k: statistics.median(v) * 1e3 for k, v in times.items()}, "ratio_to_floor": ratios}


SHORT_NAMES = {
    "x * 2.0 (memory floor)": "floor",
    "apply_rope interleaved": "apply int.",
    "apply_rope half": "apply half",
    "transformers q*cos + rotate_half(q)*sin": "transformers",
    "elementwise formula, interleaved": "elementwise",
    "complex form (Meta), interleaved": "complex",
    "block-diagonal matrices, interleaved": "matrices",
}


def sweep(kind: str, values: tuple[int, ...], rounds: int, threads: int) -> dict[str, object]:
    """Median ms of every form for each head dimension (kind "dim") or sequence length (kind "seq")."""
    torch.set_num_threads(threads)
    result: dict[str, object] = {"kind": kind, "values": list(values), "threads": threads, "rounds": rounds,
                                 "shapes": [], "median_ms": {}, "ratio_to_floor": {}}
    if kind == "dim":
        title = f"(3) head dimension sweep, x float32 (batch, heads, seq) = {SWEEP_DIM_SHAPE} by dim"
    else:
        title = f"(4) sequence length sweep, x float32 (batch, heads, dim) = {SWEEP_LENGTH_SHAPE}, seq varies"
    print(f"\n{title}, {threads} torch thread(s), {rounds} rounds: median ms, then ratio to x * 2.0")
    print("  " + f"{kind:>6s} " + "".join(f"{short:>13s}" for short in SHORT_NAMES.values()))
    for value in values:
        if kind == "dim":
            shape = (*SWEEP_DIM_SHAPE, value)
        else:
            shape = (SWEEP_LENGTH_SHAPE[0], SWEEP_LENGTH_SHAPE[1], value, SWEEP_LENGTH_SHAPE[2])
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(value))
        candidates = {name: function for name, function in forms(x).items() if name in SHORT_NAMES}
        times = bm.time_alternating(candidates, rounds=rounds)
        ratios = bm.median_ratios(times, "x * 2.0 (memory floor)")
        result["shapes"].append(list(shape))
        for name in SHORT_NAMES:
            result["median_ms"].setdefault(name, []).append(statistics.median(times[name]) * 1e3)
            result["ratio_to_floor"].setdefault(name, []).append(ratios[name])
        print("  " + f"{value:6d} " + "".join(f"{statistics.median(times[name]) * 1e3:10.2f} ms" for name in SHORT_NAMES))
        print("  " + " " * 7 + "".join(f"{ratios[name]:12.2f}x" for name in SHORT_NAMES))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds of the main comparison")
    parser.add_argument("--sweep-rounds", type=int, default=9, help="timed rounds per sweep point")
    parser.add_argument("--threads", type=int, default=2,
                        help="torch intra-op threads of sections (1) and (2); (1) is repeated with 1 thread")
    parser.add_argument("--output", type=Path, help="also write the results as JSON to this file")
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    machine = bm.machine_description()
    command = "python benchmarks/rope.py " + " ".join(sys.argv[1:] if argv is None else argv)
    print(f"command: {command.strip()}")
    print(f"machine: {machine['cpu']}, {machine['cores']} logical cores; torch {machine['torch']}; "
          f"Python {machine['python']}; load average {machine['load_average']} at the start")
    print("ratios are medians over rounds that call every candidate in turn; the sweeps run on one thread, so "
          "that waking a second thread (milliseconds on a busy machine) does not hide how the work grows")
    results = {"command": command.strip(), "machine": machine, "goals": GOALS,
               "main": main_comparison(args.rounds, args.threads),
               "main_one_thread": main_comparison(args.rounds, 1, check=False) if args.threads != 1 else None,
               "autograd": autograd_comparison(max(3, args.rounds // 2), args.threads),
               "sweep_dim": sweep("dim", SWEEP_DIMS, args.sweep_rounds, 1),
               "sweep_seq": sweep("seq", SWEEP_LENGTHS, args.sweep_rounds, 1)}
    results["seconds"] = time.perf_counter() - started
    results["load_average_at_end"] = bm.machine_description()["load_average"]
    print(f"\ntotal time {results['seconds']:.0f} s, load average {results['load_average_at_end']} at the end")
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(results, indent=1) + "\n")
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
