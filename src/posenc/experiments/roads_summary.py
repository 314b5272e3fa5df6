""" "Other roads"' measurements summed up for the page: accuracy and loss by length,
accuracy by needle distance, and one setting's seed means. numpy only.

Each function reads :class:`~posenc.experiments.roads_claims.RoadsSeed` objects (by seed,
as :func:`~posenc.experiments.roads_claims.read_roads` returns them) and gives one row per
seed, in seed order, so a figure can draw the seeds' spread as well as their mean.
Accuracies are fractions of answers; losses are bits per byte.
"""

from __future__ import annotations

import numpy as np

from posenc.experiments.roads_claims import Road, RoadsSeed
from posenc.experiments.roads_config import ROADS_MULTIPLES


def _at(road: Road, multiple: int) -> Road:
    return Road(road.encoding, multiple, road.method, road.model)


def accuracy_by_multiple(
    seeds: dict[int, RoadsSeed],
    road: Road,
    multiples: tuple[int, ...] = ROADS_MULTIPLES,
) -> np.ndarray:
    """Passkey accuracy of ``road`` (its multiple ignored) over all answers at each of
    ``multiples``; shape (seeds, multiples)."""
    return np.array(
        [
            [seeds[seed].passkey(_at(road, m))[1].mean() for m in multiples]
            for seed in sorted(seeds)
        ]
    )


def accuracy_by_distance(
    seeds: dict[int, RoadsSeed],
    road: Road,
    edges: np.ndarray,
    multiples: tuple[int, ...] = ROADS_MULTIPLES,
) -> np.ndarray:
    """Passkey accuracy of ``road`` (its multiple ignored) per needle distance bin
    ``[edges[j], edges[j + 1])``, pooling its answers at ``multiples``; shape (seeds,
    bins), NaN where a bin holds no answer."""
    edges = np.asarray(edges)
    if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
        raise ValueError("edges must be an increasing 1-d array of at least 2 values")
    out = np.full((len(seeds), edges.size - 1), np.nan)
    for row, seed in enumerate(sorted(seeds)):
        right, count = np.zeros(edges.size - 1), np.zeros(edges.size - 1)
        for multiple in multiples:
            _, correct, _ = seeds[seed].passkey(_at(road, multiple))
            results = seeds[seed].results["passkey", road.encoding]
            bins = np.digitize(seeds[seed].distances(results, multiple), edges) - 1
            inside = (bins >= 0) & (bins < edges.size - 1)
            right += np.bincount(bins[inside], correct[inside], edges.size - 1)
            count += np.bincount(bins[inside], minlength=edges.size - 1)
        out[row, count > 0] = right[count > 0] / count[count > 0]
    return out


def loss_by_multiple(
    seeds: dict[int, RoadsSeed],
    road: Road,
    protocol: str = "whole_window",
    multiples: tuple[int, ...] = ROADS_MULTIPLES,
) -> np.ndarray:
    """Mean text loss (bits per byte) of ``road`` (its multiple ignored) at each of
    ``multiples``; shape (seeds, multiples)."""
    return np.array(
        [
            [seeds[seed].text(_at(road, m), protocol).mean() for m in multiples]
            for seed in sorted(seeds)
        ]
    )


def summary_table(
    seeds: dict[int, RoadsSeed],
    rows: dict[str, Road],
    multiples: tuple[int, ...] = (1, 2, 16),
) -> str:
    """A plain-text table, one line per labelled road (its multiple ignored): the seeds'
    mean passkey accuracy (%) and text loss (bits per byte, whole windows) at each of
    ``multiples``; "-" where a setting is not stored (a training-free method at 1L)."""
    width = max(len(label) for label in rows) + 1
    lengths = "".join(f"{m:>5d}L" for m in multiples)
    span = 6 * len(multiples)
    lines = [
        f"{'':{width}s}{'passkey, % right':>{span}s}  {'text, bits per byte':>{span}s}",
        f"{'':{width}s}{lengths}  {lengths}",
    ]
    for label, road in rows.items():
        accuracy, loss = "", ""
        for m in multiples:
            try:
                right = accuracy_by_multiple(seeds, road, (m,)).mean()
                bits = loss_by_multiple(seeds, road, "whole_window", (m,)).mean()
                accuracy, loss = accuracy + f"{100 * right:6.0f}", loss + f"{bits:6.2f}"
            except KeyError:
                accuracy, loss = accuracy + f"{'-':>6s}", loss + f"{'-':>6s}"
        lines.append(f"{label:{width}s}{accuracy}  {loss}")
    return "\n".join(lines)
