"""Write tests/golden/relative_bias_transformers.npz: T5's buckets and ALiBi's slopes by transformers.

The tests compare ``posenc.t5_relative_position_bucket`` and ``posenc.alibi_slopes`` with
these values without needing transformers. Run it in a throwaway environment, never in the
book's .venv:

    python3 -m venv /tmp/golden-venv
    /tmp/golden-venv/bin/pip install torch==2.13.0 transformers==5.24.0 numpy
    PYTHONPATH=src /tmp/golden-venv/bin/python scripts/make_bias_golden.py

T5: transformers' own ``T5Attention._relative_position_bucket`` (a static method of
``transformers.models.t5.modeling_t5``) on every relative position of :data:`POSITIONS`
(-4096 .. 4096 and a few far ones) for each option set of :func:`t5_options`, stored as
int16, one row per option set. :func:`t5_rejected` lists option sets posenc refuses and
records what transformers returns for them (it raises for none).

ALiBi: the slopes of ``_get_alibi_slopes`` (behind BLOOM's ``build_alibi_tensor``,
``transformers.models.bloom.modeling_bloom``) for 1 .. 64 heads, float32 as it computes
them, concatenated, and ``build_alibi_tensor`` itself for 12 heads on a mask with padding
(rows of the batch times heads, one per key position).
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "tests" / "golden" / "relative_bias_transformers.npz"

FAR = (5000, 10**4, 65536, 10**6, 2**31 - 1)
#: The relative positions every option set is evaluated on (key position - query position).
POSITIONS = np.array(
    sorted({*range(-4096, 4097), *FAR, *(-f for f in FAR)}), dtype=np.int64
)
ALIBI_HEADS = tuple(range(1, 65))
#: BLOOM's build_alibi_tensor: 12 heads, a batch of two rows, the second left-padded.
ALIBI_MASK = ((1, 1, 1, 1, 1, 1, 1), (0, 0, 1, 1, 1, 1, 1))
ALIBI_MASK_HEADS = 12


def t5_options() -> list[dict]:
    """Option sets transformers handles: T5's default (32 buckets, 128), the sizes other
    T5-style models use, unidirectional ones with odd counts, and max_distance just above
    the exact range and far beyond it."""
    out = []
    for bidirectional, num_buckets, max_distance in itertools.product(
        (True, False), (4, 6, 8, 10, 16, 32, 64, 128), (9, 16, 20, 100, 128, 129, 1000)
    ):
        half = num_buckets // 2 if bidirectional else num_buckets
        if max_distance > half // 2:
            out.append(
                {
                    "bidirectional": bidirectional,
                    "num_buckets": num_buckets,
                    "max_distance": max_distance,
                }
            )
    for num_buckets in (2, 3, 5, 33):  # odd and tiny counts are fine one way
        out.append(
            {"bidirectional": False, "num_buckets": num_buckets, "max_distance": 128}
        )
    return out


def t5_rejected() -> list[dict]:
    """Option sets posenc refuses, {"options", "argument"}: an odd count both ways (the
    last bucket is never used), too few buckets for an exact one, max_distance not above
    the exact range (a logarithm <= 0 in the denominator)."""
    rows = [
        (
            {"bidirectional": True, "num_buckets": 33, "max_distance": 128},
            "num_buckets",
        ),
        ({"bidirectional": True, "num_buckets": 7, "max_distance": 128}, "num_buckets"),
        ({"bidirectional": True, "num_buckets": 2, "max_distance": 128}, "num_buckets"),
        (
            {"bidirectional": False, "num_buckets": 1, "max_distance": 128},
            "num_buckets",
        ),
        ({"bidirectional": True, "num_buckets": 32, "max_distance": 8}, "max_distance"),
        ({"bidirectional": True, "num_buckets": 32, "max_distance": 4}, "max_distance"),
        (
            {"bidirectional": False, "num_buckets": 32, "max_distance": 16},
            "max_distance",
        ),
    ]
    return [{"options": options, "argument": argument} for options, argument in rows]


def transformers_buckets(options: dict) -> np.ndarray:
    """transformers' buckets for :data:`POSITIONS` under ``options``, int64."""
    import torch
    from transformers.models.t5.modeling_t5 import T5Attention

    buckets = T5Attention._relative_position_bucket(torch.tensor(POSITIONS), **options)
    return buckets.numpy().astype(np.int64)


def what_transformers_does(options: dict) -> str:
    """For a refused option set: the error transformers raises, or the buckets it uses."""
    try:
        buckets = transformers_buckets(options)
    except Exception as error:  # any error is kept as text
        return f"raises {type(error).__name__}: {error}"
    used = sorted(set(buckets.tolist()))
    if len(used) > 12:
        return (
            f"returns buckets {used[0]} .. {used[-1]} ({len(used)} distinct) "
            f"for num_buckets {options['num_buckets']}"
        )
    return f"returns buckets {used} for num_buckets {options['num_buckets']}"


def bloom_slopes(num_heads: int) -> np.ndarray:
    import torch
    from transformers.models.bloom.modeling_bloom import _get_alibi_slopes

    return _get_alibi_slopes(num_heads, torch.device("cpu")).numpy()


def bloom_alibi() -> np.ndarray:
    import torch
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    mask = torch.tensor(ALIBI_MASK)
    return build_alibi_tensor(mask, ALIBI_MASK_HEADS, torch.float32).numpy()


def main() -> None:
    import torch
    import transformers

    options = t5_options()
    buckets = np.stack([transformers_buckets(o) for o in options])
    assert buckets.min() >= 0 and buckets.max() < 2**15
    rejected = [
        {**row, "transformers": what_transformers_does(row["options"])}
        for row in t5_rejected()
    ]
    slopes = [bloom_slopes(n) for n in ALIBI_HEADS]
    assert all(
        s.dtype == np.float32 and s.shape == (n,) for s, n in zip(slopes, ALIBI_HEADS)
    )
    meta = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "made_by": "scripts/make_bias_golden.py",
        "t5_options": options,
        "t5_rejected": rejected,
        "alibi_heads": list(ALIBI_HEADS),
        "alibi_mask": [list(row) for row in ALIBI_MASK],
        "alibi_mask_heads": ALIBI_MASK_HEADS,
    }
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        OUTPUT,
        meta=np.array(json.dumps(meta, sort_keys=True)),
        t5_positions=POSITIONS,
        t5_buckets=buckets.astype(np.int16),
        alibi_slopes=np.concatenate(slopes),
        alibi_tensor=bloom_alibi(),
    )
    print(
        f"wrote {len(options)} T5 option sets x {POSITIONS.size} relative positions, "
        f"{len(rejected)} refused option sets, ALiBi slopes for 1 .. {ALIBI_HEADS[-1]} "
        f"heads to {OUTPUT} with transformers {transformers.__version__}, "
        f"torch {torch.__version__}"
    )


if __name__ == "__main__":
    main()
