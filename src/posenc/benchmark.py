"""Timing RoPE side by side: the forms, a cost model and a fair clock.

Imports torch; import by name: ``from posenc import benchmark``.

The forms below are what ``benchmarks/rope.py`` (``make bench``) and the
performance appendix time against :func:`posenc.apply_rope`; the tests check
that each one computes the same rotation. Angles are formed in float64
everywhere (:func:`posenc.rope.rope_angles`) and only cos, sin or the rotors
are cast.

On a shared machine one timing means little. :func:`time_alternating` calls
the candidates in turn, round after round, so that a slow spell hits all of
them, and the medians of the rounds are compared as ratios measured in one
run.
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import time
from collections.abc import Callable, Mapping

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from posenc._validation import (
    check_choice,
    check_even_positive_int,
    check_non_negative_int,
    check_positive_int,
)
from posenc.fast_rope import complex_rotors, rotate_by_rotors
from posenc.rope import rope_angles, rope_inv_freq
from posenc.rotation import block_diagonal_rotation, cos_sin


def _cos_sin(positions: object, dim: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    inv_freq = rope_inv_freq(check_even_positive_int(dim, "dim"), base)
    return cos_sin(rope_angles(positions, inv_freq))


def cos_sin_tables(
    positions: object,
    dim: int,
    *,
    base: float = 10000.0,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of m * theta_i, each (seq, dim/2) in ``dtype``.

    The tables :func:`posenc.rope.rotate_pairs` takes; computed in float64,
    then cast.
    """
    cos, sin = _cos_sin(positions, dim, base)
    return torch.from_numpy(cos).to(dtype), torch.from_numpy(sin).to(dtype)


def rope_matrices(
    positions: object,
    dim: int,
    *,
    base: float = 10000.0,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The block-diagonal R_m of every position, shape (seq, dim, dim).

    Interleaved pairs, the form of note 000 and RoFormer eq. 13: block i of
    R_m is [[cos, -sin], [sin, cos]] of the angle m * theta_i. Equal to
    stacking :func:`posenc.rope_matrix`, built at once.
    """
    matrices = block_diagonal_rotation(*_cos_sin(positions, dim, base))
    return torch.from_numpy(matrices).to(dtype)


def rotate_by_matrices(x: torch.Tensor, matrices: torch.Tensor) -> torch.Tensor:
    """x' = R_m x for every row, O(dim²) per row.

    ``x``: (..., seq, dim); ``matrices``: (seq, dim, dim).
    """
    return torch.einsum("sij,...sj->...si", matrices, x)


def rotor_table(
    positions: object,
    dim: int,
    *,
    base: float = 10000.0,
    dtype: torch.dtype = torch.complex64,
) -> torch.Tensor:
    """exp(j m theta_i) for every position and pair, shape (seq, dim/2).

    As Meta's LLaMA code caches them: :func:`posenc.fast_rope.complex_rotors`
    of the cos and sin tables in the matching real precision.
    """
    if dtype not in (torch.complex64, torch.complex128):
        raise ValueError(
            f"dtype must be torch.complex64 or torch.complex128, got {dtype}"
        )
    real_dtype = torch.float64 if dtype == torch.complex128 else torch.float32
    return complex_rotors(*cos_sin_tables(positions, dim, base=base, dtype=real_dtype))


def rotate_complex(x: torch.Tensor, rotors: torch.Tensor) -> torch.Tensor:
    """Interleaved RoPE in the complex form of Meta's reference code.

    RoFormer sec. 3.4.2. ``x``: (..., seq, dim) float32 or float64 with a
    contiguous last dimension; ``rotors``: (seq, dim/2) complex of the
    matching precision, cached beforehand (:func:`rotor_table`). The
    product is :func:`posenc.fast_rope.rotate_by_rotors`.
    """
    return rotate_by_rotors(x, rotors)


def transformers_cos_sin(
    positions: object,
    dim: int,
    *,
    base: float = 10000.0,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of shape (seq, dim), as transformers caches them.

    Each angle appears twice: the angles of pairs 0 .. dim/2 - 1, repeated.
    """
    cos, sin = cos_sin_tables(positions, dim, base=base, dtype=dtype)
    return torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)


def rotate_half_as_in_transformers(x: torch.Tensor) -> torch.Tensor:
    """transformers' ``rotate_half``, transcribed: (x1, x2) -> (-x2, x1) for the two halves.

    A deliberate copy of Hugging Face transformers' helper (``modeling_llama.py``),
    kept so that the benchmark times that library's formula as it is written;
    posenc's own half layout is :func:`posenc.rope.rotate_pairs`.
    """
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def transformers_formula(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> torch.Tensor:
    """Half-layout RoPE as transformers' ``apply_rotary_pos_emb`` writes it, transcribed.

    q * cos + rotate_half(q) * sin, with ``cos``, ``sin`` (seq, dim) from
    :func:`transformers_cos_sin`: a deliberate copy of that library's formula,
    the baseline the benchmark compares with.
    """
    return x * cos + rotate_half_as_in_transformers(x) * sin


def memory_floor(x: torch.Tensor) -> torch.Tensor:
    """One pass that reads x and writes a new tensor of its size: x * 2.0."""
    return x * 2.0


class _TrafficCounter(TorchDispatchMode):
    """Records every aten operator with the bytes it reads and writes."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[tuple[str, int, int]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        if func.is_view or name.startswith("empty"):
            return result  # a view or a bare allocation moves no data
        out = kwargs.get("out")
        inputs = [
            t
            for t in tree_flatten((args, kwargs))[0]
            if isinstance(t, torch.Tensor) and t is not out
        ]
        outputs = [t for t in tree_flatten(result)[0] if isinstance(t, torch.Tensor)]
        read = sum(t.numel() * t.element_size() for t in inputs)
        written = sum(t.numel() * t.element_size() for t in outputs)
        self.records.append((name, read, written))
        return result


def memory_traffic(function: Callable[[], object]) -> dict[str, object]:
    """Run ``function`` once; add up the bytes its torch operators move.

    A model of cost, not a measurement: each operator is charged the full
    size of its tensor arguments (read) and results (written), as if
    nothing stayed in a cache; views and bare allocations are free; numpy
    work is not seen. Returns {"ops": [operator names],
    "bytes_read": int, "bytes_written": int}.
    """
    with _TrafficCounter() as counter:
        function()
    records = counter.records
    return {
        "ops": [name for name, _, _ in records],
        "bytes_read": sum(read for _, read, _ in records),
        "bytes_written": sum(written for _, _, written in records),
    }


def time_alternating(
    candidates: Mapping[str, Callable[[], object]],
    *,
    rounds: int = 11,
    warmup: int = 1,
) -> dict[str, list[float]]:
    """Seconds per call of every candidate, one call each per round.

    Round r calls the candidates in their given order rotated by r places,
    so no candidate always runs first or right after the same neighbour;
    ``warmup`` rounds run first and are not recorded. The garbage collector
    is paused while timing. Returns {name: [seconds of round 0, 1, ...]}.
    """
    rounds = check_positive_int(rounds, "rounds")
    warmup = check_non_negative_int(warmup, "warmup")
    names = list(candidates)
    if not names:
        raise ValueError("candidates must name at least one function to time")
    times: dict[str, list[float]] = {name: [] for name in names}
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for r in range(warmup + rounds):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                start = time.perf_counter()
                candidates[name]()
                elapsed = time.perf_counter() - start
                if r >= warmup:
                    times[name].append(elapsed)
    finally:
        if was_enabled:
            gc.enable()
    return times


def median_ratios(times: Mapping[str, list[float]], baseline: str) -> dict[str, float]:
    """Median time of every candidate over the median time of ``baseline``."""
    baseline = check_choice(baseline, "baseline", list(times))
    reference = statistics.median(times[baseline])
    return {
        name: statistics.median(values) / reference for name, values in times.items()
    }


def machine_description() -> dict[str, object]:
    """CPU model, logical cores, torch and Python versions, load average.

    The CPU model comes from /proc/cpuinfo where it exists.
    ``load_average`` is the 1-minute load when called (None where the OS
    has none): above the number of cores, other processes compete for the
    CPU while we time.
    """
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "load_average": None if load is None else round(load, 2),
    }
