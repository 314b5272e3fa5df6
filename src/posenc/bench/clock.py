"""The clock of ``make bench``: alternating rounds, median ratios, bytes moved.

Imports torch; import by name: ``from posenc.bench import clock``. On a shared machine
one timing means little: :func:`time_alternating` calls the candidates in turn, round
after round, so that a slow spell hits all of them, and :func:`median_ratios` compares
the medians of the rounds as ratios measured in one run. :func:`memory_traffic` counts
the bytes each torch operation reads and writes through torch's dispatch mode, a private
torch API (``torch.utils._python_dispatch``); nothing outside this harness uses it.
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import time
from collections.abc import Callable, Mapping

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from posenc._validation import (
    check_choice,
    check_non_negative_int,
    check_positive_int,
)


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
