"""Write tests/golden/rope_reference.json: RoPE reference outputs on seeded inputs.

Two references, both independent of posenc:

* Hugging Face transformers' LLaMA code ("half" layout), run as it is:
  ``apply_rotary_pos_emb`` (with ``rotate_half``) fed (a) cos/sin built in float64 from
  the positions, and (b) the cos/sin of transformers' own ``LlamaRotaryEmbedding``, which
  forms frequencies and angles in float32.
* A transcription of Meta's ``precompute_freqs_cis`` / ``apply_rotary_emb``
  (meta-llama/llama ``llama/model.py``, "interleaved" layout): pairs (x[2i], x[2i+1])
  viewed as complex numbers and multiplied by ``torch.polar(1, m * theta_i)``, written out
  below in float64 with the same steps (inputs laid out (batch, seq, heads, head_dim)).
  Meta's code itself is not installed or run here.

transformers is not a dependency of the book. Run this in a throwaway environment:

    python3 -m venv /tmp/rope-golden-venv
    /tmp/rope-golden-venv/bin/pip install torch==2.13.0 transformers
    /tmp/rope-golden-venv/bin/python scripts/make_rope_golden.py

The script does not import posenc, so the references cannot inherit its mistakes. The tests (tests/test_rope_golden.py) read the JSON file and need no transformers.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

import torch
import transformers
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import (
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)

OUT = Path(__file__).resolve().parents[1] / "tests" / "golden" / "rope_reference.json"
SEED = 0
HEAD_DIM = 16
BASE = 10000.0


def to_list(tensor: torch.Tensor) -> list:
    return tensor.detach().cpu().double().tolist()


def inv_freq_float64(dim: int, base: float) -> torch.Tensor:
    return 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)


def hf_with_float64_angles(q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor):
    """transformers' apply_rotary_pos_emb, cos/sin as its LlamaRotaryEmbedding lays them out, in float64."""
    freqs = positions.double()[:, None] * inv_freq_float64(HEAD_DIM, BASE)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)[None]  # (batch=1, seq, head_dim)
    # unsqueeze_dim=1: q is (batch, heads, seq, dim)
    return apply_rotary_pos_emb(q, k, emb.cos(), emb.sin())


def tiny_llama_config() -> LlamaConfig:
    """The smallest LlamaConfig whose rotary embedding has head dimension HEAD_DIM and base BASE."""
    return LlamaConfig(
        hidden_size=HEAD_DIM * 2,
        num_attention_heads=2,
        head_dim=HEAD_DIM,
        rope_theta=BASE,
        max_position_embeddings=64,
    )


def hf_end_to_end_float32(q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor):
    """transformers' own LlamaRotaryEmbedding (float32 frequencies and angles) + apply_rotary_pos_emb."""
    config = tiny_llama_config()
    rotary = LlamaRotaryEmbedding(config)
    cos, sin = rotary(q, positions[None])
    q_embed, k_embed = apply_rotary_pos_emb(q, k, cos, sin)
    return q_embed, k_embed, rotary.inv_freq


def meta_complex_form(x: torch.Tensor, start_pos: int) -> torch.Tensor:
    """A float64 transcription of Meta's precompute_freqs_cis / apply_rotary_emb (polar form).

    x is (batch, seq, heads, head_dim); positions start_pos .. start_pos+seq-1.
    """
    seq, dim = x.shape[1], x.shape[-1]
    positions = torch.arange(start_pos, start_pos + seq, dtype=torch.float64)
    angles = torch.outer(positions, inv_freq_float64(dim, BASE))  # (seq, dim/2)
    rotors = torch.polar(torch.ones_like(angles), angles)  # exp(i m theta), complex128
    # (batch, seq, heads, dim/2)
    pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], dim // 2, 2).contiguous())
    rotated = pairs * rotors[None, :, None, :]
    return torch.view_as_real(rotated).flatten(-2)


def main() -> None:
    generator = torch.Generator().manual_seed(SEED)
    draw = lambda *shape: torch.randn(*shape, generator=generator, dtype=torch.float64)  # noqa: E731

    golden: dict = {
        "about": "RoPE reference outputs made by scripts/make_rope_golden.py; do not edit by hand",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "seed": SEED,
        "head_dim": HEAD_DIM,
        "base": BASE,
    }

    # (a) transformers' rotation with float64 angles: q (1, 2, 6, 16), k (1, 1, 6, 16).
    positions = torch.tensor([0, 1, 2, 17, 1000, 65535])
    q, k = draw(1, 2, 6, HEAD_DIM), draw(1, 1, 6, HEAD_DIM)
    q_embed, k_embed = hf_with_float64_angles(q, k, positions)
    golden["hf_half_float64"] = {
        "layout": "half",
        "positions": positions.tolist(),
        "q": to_list(q),
        "k": to_list(k),
        "q_embed": to_list(q_embed),
        "k_embed": to_list(k_embed),
    }

    # (b) transformers end to end in float32, small positions (its angles are float32).
    positions = torch.arange(8)
    q, k = draw(1, 2, 8, HEAD_DIM).float(), draw(1, 2, 8, HEAD_DIM).float()
    q_embed, k_embed, inv_freq = hf_end_to_end_float32(q, k, positions)
    golden["hf_half_llama_rotary_float32"] = {
        "layout": "half",
        "positions": positions.tolist(),
        "q": to_list(q),
        "k": to_list(k),
        "inv_freq": to_list(inv_freq),
        "q_embed": to_list(q_embed),
        "k_embed": to_list(k_embed),
    }

    # (b') transformers' own cos/sin at far positions: shows how it forms the angles (float32).
    far = torch.tensor([1_000_000, 2_000_000])
    config = tiny_llama_config()
    cos, sin = LlamaRotaryEmbedding(config)(torch.zeros(1, 2, HEAD_DIM), far[None])
    golden["hf_llama_rotary_far_positions"] = {
        "positions": far.tolist(),
        "cos": to_list(cos[0]),
        "sin": to_list(sin[0]),
    }

    # (c) the transcription of Meta's complex form, (batch=1, seq=5, heads=2, head_dim),
    #     positions 1000 .. 1004.
    start_pos = 1000
    x = draw(1, 5, 2, HEAD_DIM)
    golden["meta_interleaved_complex_float64"] = {
        "layout": "interleaved",
        "start_pos": start_pos,
        "x_batch_seq_heads_dim": to_list(x),
        "x_rotated": to_list(meta_complex_form(x, start_pos)),
    }

    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(golden, indent=1) + "\n")
    print(
        f"wrote {OUT} ({OUT.stat().st_size} bytes) with transformers {transformers.__version__}"
    )


if __name__ == "__main__":
    main()
