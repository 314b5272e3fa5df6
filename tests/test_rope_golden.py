"""apply_rope against reference code: stored golden values, and live when transformers is installed.

tests/golden/rope_reference.json is written by scripts/make_rope_golden.py from Hugging Face
transformers' LLaMA code (half layout) and from a transcription of Meta's complex-number form,
precompute_freqs_cis / apply_rotary_emb (interleaved layout).
"""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from posenc import apply_rope, rope_inv_freq

pytestmark = pytest.mark.torch  # make portability re-runs it (tests/conftest.py)

GOLDEN = json.loads(
    (Path(__file__).parent / "golden" / "rope_reference.json").read_text()
)


def test_golden_file_records_its_provenance():
    assert GOLDEN["transformers_version"] and GOLDEN["torch_version"].startswith(
        "2.13.0"
    )
    assert GOLDEN["head_dim"] == 16 and GOLDEN["base"] == 10000.0


def test_matches_transformers_apply_rotary_pos_emb_half_layout_float64():
    case = GOLDEN["hf_half_float64"]
    for name in ("q", "k"):
        x, expected = np.array(case[name]), np.array(case[f"{name}_embed"])
        np.testing.assert_allclose(
            apply_rope(x, case["positions"], layout="half"),
            expected,
            atol=1e-12,
            rtol=0,
        )
        # the other layout does not match: the test can tell them apart
        assert np.max(np.abs(apply_rope(x, case["positions"]) - expected)) > 0.1


def test_matches_transformers_llama_rotary_embedding_end_to_end_in_float32():
    case = GOLDEN["hf_half_llama_rotary_float32"]
    np.testing.assert_allclose(rope_inv_freq(16), case["inv_freq"], rtol=1e-6)
    # Measured (scripts/measure_kernel_drift.py): off by 2.4e-7 at most, transformers' float32
    # angles at positions up to 65535, bit for bit the same under every CPU kernel family and 1 or 2
    # threads. The half layout rounds each product as the formula does, so another processor can
    # move a value by one float32 ulp (2.4e-7 at |x| < 4) at most: 2e-6 is ample, and not loose.
    for name in ("q", "k"):
        x = torch.tensor(case[name], dtype=torch.float32)
        rotated = apply_rope(x, case["positions"], layout="half")
        np.testing.assert_allclose(
            rotated.double().numpy(), case[f"{name}_embed"], atol=2e-6, rtol=0
        )


def test_matches_meta_complex_form_interleaved_layout():
    case = GOLDEN["meta_interleaved_complex_float64"]
    x = np.array(
        case["x_batch_seq_heads_dim"]
    )  # (batch, seq, heads, dim) as in Meta's code
    positions = np.arange(case["start_pos"], case["start_pos"] + x.shape[1])
    rotated = apply_rope(x.transpose(0, 2, 1, 3), positions).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(rotated, case["x_rotated"], atol=1e-12, rtol=0)


def test_live_against_installed_transformers():
    pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import (
        apply_rotary_pos_emb,
        rotate_half,
    )

    generator = torch.Generator().manual_seed(1)
    q = torch.randn(2, 3, 7, 32, generator=generator, dtype=torch.float64)
    k = torch.randn(2, 1, 7, 32, generator=generator, dtype=torch.float64)
    positions = torch.tensor([0, 3, 4, 9, 100, 5000, 123456])
    freqs = (
        positions.double()[:, None]
        * torch.from_numpy(rope_inv_freq(32, base=500000.0))[None, :]
    )
    emb = torch.cat((freqs, freqs), dim=-1)[None]
    q_hf, k_hf = apply_rotary_pos_emb(q, k, emb.cos(), emb.sin())
    torch.testing.assert_close(
        apply_rope(q, positions, base=500000.0, layout="half"), q_hf, atol=1e-12, rtol=0
    )
    torch.testing.assert_close(
        apply_rope(k, positions, base=500000.0, layout="half"), k_hf, atol=1e-12, rtol=0
    )
    torch.testing.assert_close(
        rotate_half(q), torch.cat((-q[..., 16:], q[..., :16]), dim=-1)
    )


def test_transformers_forms_its_angles_in_float32_at_far_positions():
    """Documents the reference, not posenc: its cos at 1e6 and 2e6 are those of float32 angles."""
    far = GOLDEN["hf_llama_rotary_far_positions"]
    inv_freq32 = torch.tensor(
        GOLDEN["hf_half_llama_rotary_float32"]["inv_freq"], dtype=torch.float32
    )
    angles32 = (
        (torch.tensor(far["positions"]).float()[:, None] * inv_freq32[None, :])
        .double()
        .numpy()
    )
    half = GOLDEN["head_dim"] // 2
    # The stored cosines are transformers' float32 ones: measured 3.0e-8 from the float64 cosine of
    # the same float32 angles, under every CPU kernel family (float32 products are exact IEEE
    # roundings, the same on any processor). 3e-7 is ten times that and above one float32 ulp
    # at 1 (1.2e-7), so any faithfully rounded float32 cosine passes; 1e-6 was 33 times too loose.
    np.testing.assert_allclose(
        np.array(far["cos"])[:, :half], np.cos(angles32), atol=3e-7, rtol=0
    )
    exact = np.cos(
        np.array(far["positions"])[:, None] * rope_inv_freq(GOLDEN["head_dim"])[None, :]
    )
    assert np.max(np.abs(np.array(far["cos"])[:, :half] - exact)) > 1e-2
