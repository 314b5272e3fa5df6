"""The numbers the explorers draw, computed by posenc on fixed grids at build time.

An explorer (:mod:`posenc.book.explorers`) lets the reader move controls in the static page;
the browser only selects rows of these tables and draws them, it computes nothing. Each
function here states its grid; every value comes from a posenc function, rounded to
``DIGITS`` significant digits so that the stored page is the same on every machine.
Rows are plain dicts (column name -> number or string), the form Vega-Lite reads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from posenc._validation import check_even_positive_int, check_positive_float
from posenc.rope import apply_rope, rope_inv_freq
from posenc.rotation import check_layout
from posenc.sinusoidal import dot_product_by_offset, sinusoidal_encoding, wavelengths

#: Significant digits kept in every drawn number: far below what a figure can show.
DIGITS = 4


def rounded(value: float) -> float:
    """``value`` to :data:`DIGITS` significant digits, as a Python float (0.0 stays 0.0)."""
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"value must be finite, got {value}")
    return float(f"{value:.{DIGITS}g}") + 0.0


def _check_choices(values: Sequence[object], name: str) -> list:
    values = list(values)
    if not values:
        raise ValueError(f"{name} must list at least one value")
    if len(set(values)) != len(values):
        raise ValueError(f"{name} lists a value twice: {values}")
    return values


# ----------------------------------------------------------------- chapter 2


def sinusoidal_grid(
    d_models: Sequence[int],
    bases: Sequence[float],
    *,
    num_positions: int = 64,
    num_pairs: int = 16,
    max_offset: int = 128,
) -> dict[str, list[dict]]:
    """The sinusoidal encoding for every (d_model, base) of the grid.

    Returns three tables, each with columns ``d`` (d_model) and ``base``:

    * ``"heatmap"``: PE[p, 2i] (``kind`` "sin") and PE[p, 2i + 1] (``kind`` "cos")
      (:func:`posenc.sinusoidal_encoding`) for positions p = 0 .. num_positions - 1 and
      ``num_pairs`` pairs i spread evenly over 0 .. d/2 - 1 (all of them when
      d/2 <= num_pairs); columns ``kind``, ``pair``, ``p``, ``value``, grouped by
      (kind, pair): one row of the chapter's picture, a wave along the positions;
    * ``"wavelengths"``: lambda_i = 2 pi base^(2i/d) in positions for every pair; columns
      ``pair``, ``wavelength``;
    * ``"dot"``: PE(p) . PE(p + k) for offsets k = -max_offset .. max_offset (the same for
      every p, :func:`posenc.dot_product_by_offset`); columns ``offset``, ``dot``.
    """
    d_models = [
        check_even_positive_int(d, "d_models")
        for d in _check_choices(d_models, "d_models")
    ]
    bases = [check_positive_float(b, "bases") for b in _check_choices(bases, "bases")]
    heatmap, waves, dots = [], [], []
    for d in d_models:
        for base in bases:
            encoding = sinusoidal_encoding(num_positions, d, base=base)
            pairs = np.unique(
                np.round(np.linspace(0, d // 2 - 1, min(num_pairs, d // 2))).astype(int)
            )
            for kind, column in (("sin", 0), ("cos", 1)):
                for i in pairs:
                    for p in range(num_positions):
                        heatmap.append(
                            {
                                "d": d,
                                "base": base,
                                "kind": kind,
                                "pair": int(i),
                                "p": p,
                                "value": rounded(encoding[p, 2 * i + column]),
                            }
                        )
            for i, wavelength in enumerate(wavelengths(d, base)):
                waves.append(
                    {"d": d, "base": base, "pair": i, "wavelength": rounded(wavelength)}
                )
            offsets = np.arange(-max_offset, max_offset + 1)
            for k, value in zip(offsets, dot_product_by_offset(offsets, d, base=base)):
                dots.append(
                    {"d": d, "base": base, "offset": int(k), "dot": rounded(value)}
                )
    return {"heatmap": heatmap, "wavelengths": waves, "dot": dots}


# ----------------------------------------------------------------- chapter 4


def rope_pairs_grid(
    query: Sequence[float],
    key: Sequence[float],
    *,
    num_positions: int = 32,
    base: float = 10000.0,
    layouts: Sequence[str] = ("interleaved", "half"),
) -> dict[str, list[dict]]:
    """A query and a key rotated by RoPE at every position, in each layout, and their scores.

    ``query``, ``key``: vectors of the same even length d (a small d, e.g. 8). For each
    layout and position m = 0 .. num_positions - 1, :func:`posenc.apply_rope` rotates the
    vector; the table ``"vectors"`` holds, for each pair i, the two features the layout pairs
    (interleaved: 2i, 2i+1; half: i, i + d/2) as ``x``, ``y``, with columns ``layout``,
    ``vector`` ("query" or "key"), ``position``, ``pair``. The table ``"scores"`` holds
    q_m . k_n for every (m, n), columns ``layout``, ``query_position``, ``key_position``,
    ``offset`` (m - n), ``score``.
    """
    query = np.asarray(query, dtype=np.float64)
    key = np.asarray(key, dtype=np.float64)
    if query.ndim != 1 or key.shape != query.shape:
        raise ValueError(
            f"query and key must be vectors of one length, got {query.shape} and {key.shape}"
        )
    dim = check_even_positive_int(query.shape[0], "query length")
    inv_freq = rope_inv_freq(dim, base)
    positions = np.arange(num_positions)
    vectors, scores = [], []
    for layout in _check_choices(layouts, "layouts"):
        layout = check_layout(layout)
        rotated = {}
        for name, vector in (("query", query), ("key", key)):
            stacked = np.broadcast_to(vector, (num_positions, dim))
            rotated[name] = apply_rope(
                stacked, positions, inv_freq=inv_freq, layout=layout
            )
            for m in positions:
                for i in range(dim // 2):
                    first, second = (
                        (2 * i, 2 * i + 1)
                        if layout == "interleaved"
                        else (i, i + dim // 2)
                    )
                    vectors.append(
                        {
                            "layout": layout,
                            "vector": name,
                            "position": int(m),
                            "pair": i,
                            "x": rounded(rotated[name][m, first]),
                            "y": rounded(rotated[name][m, second]),
                        }
                    )
        products = rotated["query"] @ rotated["key"].T
        for m in positions:
            for n in positions:
                scores.append(
                    {
                        "layout": layout,
                        "query_position": int(m),
                        "key_position": int(n),
                        "offset": int(m - n),
                        "score": rounded(products[m, n]),
                    }
                )
    return {"vectors": vectors, "scores": scores}


# ----------------------------------------------------------------- chapter 5

#: The factors s the scaling explorer offers.
FACTORS = (1.5, 2.0, 3.0, 4.0, 8.0, 16.0, 32.0, 40.0, 64.0)
#: The NTK-by-parts / YaRN bounds it offers, in turns (transformers' defaults: 32 and 1).
BETA_FAST = (16.0, 32.0, 64.0)
BETA_SLOW = (1.0, 2.0)
#: Llama 3.1's thresholds it offers, in wavelengths per original context (defaults 1 and 4).
LOW_FREQ = (1.0, 2.0)
HIGH_FREQ = (4.0, 8.0)
#: The value an option takes in a row of a method that does not read it.
NOT_USED = 0


def _settings(method: str) -> list[dict]:
    """Every combination of the options ``method`` reads, on the explorer's grid."""
    if method == "none":
        return [{}]
    grid = [{"factor": factor} for factor in FACTORS]
    if method == "ntk_by_parts":
        return [
            {**g, "beta_fast": fast, "beta_slow": slow, "truncate": truncate}
            for g in grid
            for fast in BETA_FAST
            for slow in BETA_SLOW
            for truncate in (True, False)
        ]
    if method == "llama3":
        return [
            {**g, "low_freq_factor": low, "high_freq_factor": high}
            for g in grid
            for low in LOW_FREQ
            for high in HIGH_FREQ
        ]
    return grid


def scaling_record(
    geometry: str,
    method: str,
    *,
    dim: int,
    base: float,
    original_max_position: int,
    factor: float = 1.0,
    label: str | None = None,
    **options,
) -> dict:
    """One setting of one method, from :func:`posenc.rope_scaling`, as one record.

    Keys: ``geometry`` (a name for (dim, base, L)), ``method`` (``label`` if given, else the
    method), ``factor`` and the options the explorer offers (``beta_fast``, ``beta_slow``,
    ``truncate`` as 1/0, ``low_freq_factor``, ``high_freq_factor``; :data:`NOT_USED` where the
    method does not read one), ``attention`` (the attention factor), and per pair i, as lists:
    ``scale`` = theta'_i / theta_i and ``turns_target`` = s L theta'_i / 2 pi (turns within
    the target context s L); ``unseen`` lists the pairs that meet angles never met in
    training (:func:`posenc.scaling.unseen_angle_pairs`). The methods that read the
    sequence length ("dynamic"; "longrope", whose long factors apply past L) are evaluated at
    the target length, seq_len = s L.
    """
    from posenc.scaling import SCALING_METHODS, rope_scaling, unseen_angle_pairs

    target = round(factor * original_max_position)
    entry = SCALING_METHODS[method]
    reads_length = entry.needs_seq_len or entry.optional_seq_len
    seq_len = {"seq_len": target} if reads_length else {}
    inv_freq, attention = rope_scaling(
        method,
        dim,
        base=base,
        factor=factor,
        original_max_position=original_max_position,
        **seq_len,
        **options,
    )
    theta = rope_inv_freq(dim, base)
    turns = target * inv_freq / (2 * np.pi)
    return {
        "geometry": geometry,
        "method": label or method,
        "factor": factor,
        "beta_fast": options.get("beta_fast", NOT_USED),
        "beta_slow": options.get("beta_slow", NOT_USED),
        "truncate": int(options.get("truncate", NOT_USED)),
        "low_freq_factor": options.get("low_freq_factor", NOT_USED),
        "high_freq_factor": options.get("high_freq_factor", NOT_USED),
        "attention": rounded(attention),
        "scale": [rounded(v) for v in inv_freq / theta],
        "turns_target": [rounded(v) for v in turns],
        "unseen": unseen_angle_pairs(
            inv_freq, dim, base, original_max_position, target
        ).tolist(),
    }


#: The methods of the explorer's grid. YaRN's frequencies are NTK-by-parts' (the explorer
#: draws those rows for "yarn"); only its attention factor differs (table "attention").
GRID_METHODS = ("none", "linear", "ntk", "dynamic", "ntk_by_parts", "llama3")


def scaling_grid(
    geometries: dict[str, tuple[int, float, int]],
    published: Sequence[dict] = (),
) -> dict[str, list[dict]]:
    """Every method on the explorer's grid of options, for every geometry.

    ``geometries``: name -> (dim, base, original_max_position). Returns:

    * ``"settings"``: a :func:`scaling_record` for each method of :data:`GRID_METHODS` and
      every combination of :data:`FACTORS`, :data:`BETA_FAST` x :data:`BETA_SLOW` x
      truncate (NTK-by-parts) and :data:`LOW_FREQ` x :data:`HIGH_FREQ` (llama3), for every
      geometry; then one record per entry of ``published`` (keyword arguments of
      :func:`scaling_record`, e.g. a model's own setting with ``label="published"``);
    * ``"attention"``: YaRN's attention factor for each factor (default mscale), columns
      ``factor``, ``attention``;
    * ``"turns"``: r_i = L / lambda_i within the original context, per geometry
      (:func:`posenc.scaling.rotations_per_pair`), columns ``geometry``, ``turns_original``
      (a list over the pairs).
    """
    from posenc.scaling import rope_scaling, rotations_per_pair

    settings, turns = [], []
    for name, (dim, base, original) in geometries.items():
        for method in GRID_METHODS:
            for options in _settings(method):
                settings.append(
                    scaling_record(
                        name,
                        method,
                        dim=dim,
                        base=base,
                        original_max_position=original,
                        **options,
                    )
                )
        turns.append(
            {
                "geometry": name,
                "turns_original": [
                    rounded(r) for r in rotations_per_pair(dim, base, original)
                ],
            }
        )
    for entry in published:
        settings.append(scaling_record(**entry))
    attention = [
        {
            "factor": factor,
            "attention": rounded(rope_scaling("yarn", 8, factor=factor)[1]),
        }
        for factor in FACTORS
    ]
    return {"settings": settings, "attention": attention, "turns": turns}


# ----------------------------------------------------------------- chapter 6


def experiment_grid(results_by_seed: dict[int, dict], bin_width: int = 64) -> dict:
    """Chapter 6's passkey accuracies of the base model, per seed and across seeds.

    ``results_by_seed``: :func:`posenc.experiments.analysis.read_all_results`.
    Returns ``"by_length"``: accuracy over all needles for every method, length and seed
    (``seed`` a number, ``statistic`` "seed"), plus, over the seeds, the mean, lowest and
    highest (``statistic`` "mean" with ``low``, ``high``); ``"by_distance"``: the same per
    distance bin of ``bin_width`` tokens at every length (``distance`` the middle of the bin,
    :func:`posenc.experiments.analysis.accuracy_by_distance`). Base model only,
    each method at its tuning factor, as the chapter's main figures.
    """
    from posenc.experiments import analysis

    bin_width = check_even_positive_int(bin_width, "bin_width")
    if not results_by_seed:
        raise ValueError("results_by_seed must hold at least one seed")
    by_length, by_distance = [], []
    per_setting: dict[tuple, list[float]] = {}
    per_bin: dict[tuple, list[float]] = {}
    for seed in sorted(results_by_seed):
        results = results_by_seed[seed]
        for setting in analysis.settings_of(results):
            if setting["model"] != "base":
                continue
            method, length = setting["method"], setting["length"]
            accuracy = float(analysis.setting_correct(setting).mean())
            by_length.append(
                {
                    "method": method,
                    "length": length,
                    "statistic": "seed",
                    "seed": seed,
                    "accuracy": rounded(accuracy),
                }
            )
            per_setting.setdefault((method, length), []).append(accuracy)
            starts, counts, accuracies = analysis.accuracy_by_distance(
                results, setting, bin_width
            )
            for start, count, value in zip(starts, counts, accuracies):
                if count == 0:
                    continue
                distance = int(start + bin_width // 2)
                by_distance.append(
                    {
                        "method": method,
                        "length": length,
                        "statistic": "seed",
                        "seed": seed,
                        "distance": distance,
                        "accuracy": rounded(value),
                    }
                )
                per_bin.setdefault((method, length, distance), []).append(float(value))
    seeds = len(results_by_seed)
    for (method, length), values in per_setting.items():
        if len(values) == seeds:
            by_length.append(_spread({"method": method, "length": length}, values))
    for (method, length, distance), values in per_bin.items():
        if len(values) == seeds:
            by_distance.append(
                _spread(
                    {"method": method, "length": length, "distance": distance}, values
                )
            )
    return {"by_length": by_length, "by_distance": by_distance}


def _spread(keys: dict, values: list[float]) -> dict:
    return {
        **keys,
        "statistic": "mean",
        "seed": -1,
        "accuracy": rounded(np.mean(values)),
        "low": rounded(np.min(values)),
        "high": rounded(np.max(values)),
    }


def geometry_name(dim: int, base: float, original_max_position: int) -> str:
    """The explorer's name for a (head dim, base, original context) geometry."""
    return f"d{dim}-base{base:g}-L{original_max_position}"


def preset_grid(presets: dict) -> tuple[dict, dict[str, str]]:
    """:func:`scaling_grid` for the geometries of ``presets`` (name -> ``Preset``), with each
    model's published setting as a record whose ``geometry`` is the model's name and whose
    ``method`` is "published". Returns the tables and {model: its geometry's name}."""
    geometries, of_model, published = {}, {}, []
    for name, preset in presets.items():
        geometry = geometry_name(preset.dim, preset.base, preset.original_max_position)
        geometries[geometry] = (preset.dim, preset.base, preset.original_max_position)
        of_model[name] = geometry
        arguments = preset.arguments()
        published.append({**arguments, "geometry": name, "label": "published"})
    return scaling_grid(geometries, published), of_model
