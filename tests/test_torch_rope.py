"""posenc.torch_rope.RotaryEmbedding against posenc.apply_rope, and its cache."""

import numpy as np
import pytest
import torch

from posenc import apply_rope, rope_inv_freq, rope_matrix
from posenc.torch_rope import RotaryEmbedding

pytestmark = pytest.mark.torch  # make portability re-runs it (tests/conftest.py)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_module_equals_apply_rope_on_q_and_k(layout, dtype):
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 6, 16, generator=generator, dtype=dtype)
    k = torch.randn(
        2, 2, 6, 16, generator=generator, dtype=dtype
    )  # fewer key heads, as in grouped-query attention
    rope = RotaryEmbedding(16, layout=layout, max_positions=8)
    q_rot, k_rot = rope(q, k)
    positions = torch.arange(6)
    exact = 1e-12 if dtype == torch.float64 else 1e-6
    torch.testing.assert_close(
        q_rot, apply_rope(q, positions, layout=layout), atol=exact, rtol=0
    )
    torch.testing.assert_close(
        k_rot, apply_rope(k, positions, layout=layout), atol=exact, rtol=0
    )
    assert q_rot.dtype == dtype and q_rot.shape == q.shape


def rotated_by_rope_matrix(x, positions, layout):
    """Row m of x times the block-diagonal R(positions[m]) of rope_matrix, numpy float64: no cache, no kernel."""
    matrices = np.stack(
        [rope_matrix(int(p), x.shape[-1], layout=layout) for p in positions]
    )
    return np.einsum("sij,...sj->...si", matrices, x.double().numpy())


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_forward_rotates_q_and_k_at_the_positions_it_is_given(layout):
    generator = torch.Generator().manual_seed(7)
    q = torch.randn(2, 4, 5, 16, generator=generator, dtype=torch.float64)
    k = torch.randn(2, 2, 5, 16, generator=generator, dtype=torch.float64)
    positions = [
        3,
        17,
        17,
        250,
        9,
    ]  # offset, repeated and out of order: nothing like 0 .. seq-1
    rope = RotaryEmbedding(16, layout=layout)
    q_rot, k_rot = rope(q, k, positions)
    np.testing.assert_allclose(
        q_rot.numpy(), rotated_by_rope_matrix(q, positions, layout), atol=1e-12, rtol=0
    )
    np.testing.assert_allclose(
        k_rot.numpy(), rotated_by_rope_matrix(k, positions, layout), atol=1e-12, rtol=0
    )
    # the positions matter: at the default 0 .. seq-1 both results differ by far more than the tolerance
    q_default, k_default = rope(q, k)
    assert (
        torch.max(torch.abs(q_rot - q_default)) > 0.1
        and torch.max(torch.abs(k_rot - k_default)) > 0.1
    )


def test_cache_grows_on_demand_to_a_power_of_two_and_stays_correct():
    rope = RotaryEmbedding(8, max_positions=4)
    assert rope.cached_positions == 4
    x = torch.randn(1, 1, 3, 8, dtype=torch.float64)
    positions = [2, 3, 1000]
    result = rope.rotate(x, positions)
    assert rope.cached_positions == 1024
    torch.testing.assert_close(result, apply_rope(x, positions), atol=1e-12, rtol=0)
    rope.rotate(x, [0, 1, 1024])
    assert rope.cached_positions == 2048
    rope.rotate(x, [0, 1, 2])
    assert rope.cached_positions == 2048  # never shrinks


def test_custom_frequencies_and_attention_factor_reach_the_cache():
    inv_freq = rope_inv_freq(8, base=500.0) / 3.0
    rope = RotaryEmbedding(8, inv_freq=inv_freq, attention_factor=1.2, layout="half")
    x = torch.randn(5, 8, dtype=torch.float64)
    positions = [0, 7, 8, 9, 4000]
    expected = apply_rope(
        x, positions, inv_freq=inv_freq, attention_factor=1.2, layout="half"
    )
    torch.testing.assert_close(rope.rotate(x, positions), expected, atol=1e-12, rtol=0)


def test_cache_is_not_saved_and_the_module_has_no_parameters():
    rope = RotaryEmbedding(8)
    assert list(rope.parameters()) == [] and rope.state_dict() == {}
    assert "cached_positions=2048" in repr(rope)


def test_gradients_flow_through_the_module():
    q = torch.randn(1, 1, 4, 8, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 1, 4, 8, dtype=torch.float64)
    q_rot, k_rot = RotaryEmbedding(8)(q, k)
    (q_rot * k_rot).sum().backward()
    # d/dq of sum(R q . R k) over each row is R^T R k = k
    torch.testing.assert_close(q.grad, k)


@pytest.mark.parametrize(
    "call,error,name",
    [
        (lambda: RotaryEmbedding(7), ValueError, "dim"),
        (lambda: RotaryEmbedding(8, layout="x"), ValueError, "layout"),
        (lambda: RotaryEmbedding(8, max_positions=0), ValueError, "max_positions"),
        (lambda: RotaryEmbedding(8, inv_freq=[1.0, 2.0]), ValueError, "inv_freq"),
        (lambda: RotaryEmbedding(8).rotate(torch.ones(2, 6)), ValueError, "x"),
        (
            lambda: RotaryEmbedding(8).rotate(torch.ones(2, 8, dtype=torch.int64)),
            TypeError,
            "x",
        ),
        (lambda: RotaryEmbedding(8).rotate(np.ones((2, 8))), TypeError, "x"),
        (
            lambda: RotaryEmbedding(8).rotate(torch.ones(2, 8), [0]),
            ValueError,
            "positions",
        ),
        (
            lambda: RotaryEmbedding(8).rotate(torch.ones(2, 8), [0, -1]),
            ValueError,
            "positions",
        ),
        (
            lambda: RotaryEmbedding(8).rotate(torch.ones(2, 8), [0.0, 1.0]),
            TypeError,
            "positions",
        ),
    ],
)
def test_bad_input_names_the_argument(call, error, name):
    with pytest.raises(error, match=f"^{name} must"):
        call()
