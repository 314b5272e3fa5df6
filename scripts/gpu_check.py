"""The torch tests and a RoPE benchmark on a CUDA GPU; skips cleanly without one.

    .venv/bin/python scripts/gpu_check.py [--rounds 21]

Without a CUDA device (torch.cuda.is_available() False) it says so and exits 0. With one it
runs the unit tests marked ``torch`` (among them tests/test_rope_cuda.py, which the CPU run
skips), then times on the GPU, side by side in alternating rounds (posenc.bench.clock), the
memory floor x * 2.0, apply_rope in both layouts with positions on the device, the cached
RotaryEmbedding and transformers' formula, and prints each median as a ratio to the floor.
Exit status: that of the tests.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
SHAPE = (4, 16, 1024, 128)  # the CPU benchmark's main shape (benchmarks/rope.py)


def run_tests() -> int:
    command = [sys.executable, "-m", "pytest", "tests", "--ignore=tests/browser", "-q"]
    print("$", " ".join(command[2:]), "-m torch", flush=True)
    return subprocess.run([*command, "-m", "torch"], cwd=ROOT).returncode


def synchronised(function):
    def run():
        function()
        torch.cuda.synchronize()

    return run


def benchmark(rounds: int) -> dict[str, float]:
    import posenc
    from posenc.bench import clock
    from posenc.bench import forms as rope_forms
    from posenc.torch_rope import RotaryEmbedding

    x = torch.randn(*SHAPE, device="cuda")
    seq, dim = SHAPE[-2], SHAPE[-1]
    positions = torch.arange(seq, device="cuda")
    hf_cos, hf_sin = (
        t.cuda() for t in rope_forms.transformers_cos_sin(range(seq), dim)
    )
    cached = {
        layout: RotaryEmbedding(dim, layout=layout, max_positions=seq, device="cuda")
        for layout in ("interleaved", "half")
    }
    candidates = {
        "x * 2.0 (memory floor)": lambda: rope_forms.memory_floor(x),
        "apply_rope interleaved": lambda: posenc.apply_rope(x, positions),
        "apply_rope half": lambda: posenc.apply_rope(x, positions, layout="half"),
        "RotaryEmbedding interleaved": lambda: cached["interleaved"].rotate(x),
        "RotaryEmbedding half": lambda: cached["half"].rotate(x),
        "transformers formula": lambda: rope_forms.transformers_formula(
            x, hf_cos, hf_sin
        ),
    }
    times = clock.time_alternating(
        {name: synchronised(f) for name, f in candidates.items()}, rounds=rounds
    )
    ratios = clock.median_ratios(times, "x * 2.0 (memory floor)")
    print(f"\n{torch.cuda.get_device_name()}, float32 {SHAPE}, {rounds} rounds:")
    for name, ratio in ratios.items():
        print(f"  {name:32s} {ratio:6.2f}x the floor")
    return ratios


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device (torch.cuda.is_available() is False): skipped")
        return 0
    status = run_tests()
    benchmark(args.rounds)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
