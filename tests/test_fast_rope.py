"""The fast torch kernels of rotate_pairs / apply_rope against the reference formula and numpy float64.

No timings here: speed is measured by benchmarks/rope.py (make bench). These tests pin that
the fast kernels are actually taken where they should be, compute the same rotation, keep
type, dtype, shape and device, return a new contiguous tensor, and let gradients flow.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc import apply_rope, fast_rope, rope_inv_freq
from posenc.rope import rope_angles, rotate_pairs, rotate_pairs_elementwise

pytestmark = pytest.mark.torch  # make portability re-runs it (tests/conftest.py)

LAYOUTS = ["interleaved", "half"]
FAST_KERNEL = {"interleaved": "complex", "half": "half-out"}
TOLERANCE = {torch.float32: 2e-6, torch.float64: 1e-12}


def cos_sin(positions, dim, dtype):
    """cos and sin tables computed in numpy float64, then cast."""
    angles = rope_angles(np.asarray(positions), rope_inv_freq(dim))
    return torch.from_numpy(np.cos(angles)).to(dtype), torch.from_numpy(
        np.sin(angles)
    ).to(dtype)


def reference(x, positions, layout):
    """float64 numpy apply_rope of the same numbers: independent of every torch kernel."""
    return apply_rope(x.detach().double().numpy(), positions, layout=layout)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fast_kernel_is_taken_and_matches_float64_numpy(layout, dtype):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 7, 16, generator=generator, dtype=dtype)
    positions = [0, 1, 2, 100, 4095, 65536, 1_000_000]
    cos, sin = cos_sin(positions, 16, dtype)
    assert fast_rope.choose_kernel(x, cos, sin, layout) == FAST_KERNEL[layout]
    result = apply_rope(x, positions, layout=layout)
    assert (
        type(result) is torch.Tensor
        and result.dtype == dtype
        and result.shape == x.shape
    )
    assert result.device == x.device and result.is_contiguous()
    np.testing.assert_allclose(
        result.double().numpy(),
        reference(x, positions, layout),
        atol=TOLERANCE[dtype],
        rtol=0,
    )
    elementwise = rotate_pairs_elementwise(x, cos, sin, layout)
    torch.testing.assert_close(
        rotate_pairs(x, cos, sin, layout), elementwise, atol=TOLERANCE[dtype], rtol=0
    )
    if layout == "half":  # every product rounded as in the formula: the same bits
        assert torch.equal(rotate_pairs(x, cos, sin, layout), elementwise)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_transposed_heads_take_the_fast_kernel_and_return_a_contiguous_tensor(
    layout, dtype
):
    # (batch, seq, heads, dim) as a projection produces it, viewed as (batch, heads, seq, dim)
    x_bshd = torch.randn(
        2, 9, 4, 32, generator=torch.Generator().manual_seed(1), dtype=dtype
    )
    x = x_bshd.transpose(1, 2)
    assert not x.is_contiguous()
    positions = np.arange(9) * 37
    cos, sin = cos_sin(positions, 32, dtype)
    assert fast_rope.choose_kernel(x, cos, sin, layout) == FAST_KERNEL[layout]
    result = apply_rope(x, positions, layout=layout)
    assert result.is_contiguous() and result.shape == x.shape
    np.testing.assert_allclose(
        result.double().numpy(),
        reference(x, positions, layout),
        atol=TOLERANCE[dtype],
        rtol=0,
    )
    torch.testing.assert_close(
        result, apply_rope(x.contiguous(), positions, layout=layout), atol=0, rtol=0
    )


def test_memory_that_cannot_be_viewed_as_complex_falls_back_for_interleaved_only():
    big = torch.randn(3, 5, 18, generator=torch.Generator().manual_seed(2))
    odd_offset = big[..., 1:17]  # storage offset 1: pairs straddle complex numbers
    odd_stride = torch.randn(5, 17)[:, :16]  # row stride 17
    strided_last = torch.randn(5, 32)[:, ::2]  # last-dimension stride 2
    for x in (odd_offset, odd_stride, strided_last):
        positions = np.arange(x.shape[-2])
        cos, sin = cos_sin(positions, 16, torch.float32)
        assert fast_rope.choose_kernel(x, cos, sin, "interleaved") == "elementwise"
        assert (
            fast_rope.choose_kernel(x, cos, sin, "half") == "half-out"
        )  # any strides work there
        for layout in LAYOUTS:
            result = apply_rope(x, positions, layout=layout)
            assert result.shape == x.shape and result.is_contiguous()
            np.testing.assert_allclose(
                result.double().numpy(),
                reference(x, positions, layout),
                atol=2e-6,
                rtol=0,
            )
        assert torch.equal(
            rotate_pairs(x, cos, sin, "half"),
            rotate_pairs_elementwise(x, cos, sin, "half"),
        )


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_falls_back_to_the_reference_formula_bit_for_bit(layout, dtype):
    x = torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(3)).to(dtype)
    positions = [0, 1, 5, 9, 300, 2000]
    cos, sin = cos_sin(positions, 8, dtype)
    assert fast_rope.choose_kernel(x, cos, sin, layout) == "elementwise"
    result = apply_rope(x, positions, layout=layout)
    assert result.dtype == dtype and result.shape == x.shape
    assert torch.equal(result, rotate_pairs_elementwise(x, cos, sin, layout))
    # and it is still a rotation at this dtype's precision
    np.testing.assert_allclose(
        result.double().numpy(), reference(x, positions, layout), atol=0.05, rtol=0
    )


def test_cos_sin_of_another_dtype_or_a_larger_shape_fall_back():
    x = torch.randn(4, 8)
    cos64, sin64 = cos_sin(range(4), 8, torch.float64)
    assert fast_rope.choose_kernel(x, cos64, sin64, "interleaved") == "elementwise"
    assert (
        rotate_pairs(x, cos64, sin64).dtype == torch.float64
    )  # promotion, as the formula always did
    cos, sin = cos_sin(range(4), 8, torch.float32)
    assert (
        fast_rope.choose_kernel(x, cos.expand(2, 4, 4), sin.expand(2, 4, 4), "half")
        == "elementwise"
    )
    assert fast_rope.choose_kernel(x, cos[None], sin[None], "half") == "elementwise"
    assert (
        fast_rope.choose_kernel(x, cos[:1], sin[:1], "half") == "half-out"
    )  # broadcasts over seq
    assert (
        fast_rope.choose_kernel(torch.randn(0, 8), cos[:0], sin[:0], "interleaved")
        == "elementwise"
    )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_result_is_a_new_tensor(layout):
    x = torch.randn(3, 8)
    before = x.clone()
    result = apply_rope(x, [0, 1, 2], layout=layout)
    result += 1.0
    assert torch.equal(x, before)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradients_match_the_reference_formula(layout):
    generator = torch.Generator().manual_seed(4)
    x = torch.randn(
        2, 3, 5, 8, generator=generator, dtype=torch.float64, requires_grad=True
    )
    positions = [0, 3, 7, 1000, 123456]
    cos, sin = cos_sin(positions, 8, torch.float64)
    cos.requires_grad_(True)
    sin.requires_grad_(True)
    expected_kernel = "complex-autograd" if layout == "interleaved" else "elementwise"
    assert fast_rope.choose_kernel(x, cos, sin, layout) == expected_kernel
    weights = torch.randn(2, 3, 5, 8, generator=generator, dtype=torch.float64)
    fast = torch.autograd.grad(
        (rotate_pairs(x, cos, sin, layout) * weights).sum(), (x, cos, sin)
    )
    slow = torch.autograd.grad(
        (rotate_pairs_elementwise(x, cos, sin, layout) * weights).sum(), (x, cos, sin)
    )
    for got, want in zip(fast, slow):
        torch.testing.assert_close(got, want, atol=1e-12, rtol=0)
    # the gradient of a rotation is the inverse rotation: R_m^T w
    grad_x = torch.autograd.grad(
        (apply_rope(x, positions, layout=layout) * weights).sum(), x
    )[0]
    inverse = np.stack(
        [
            apply_rope(weights.numpy()[..., [row], :], [-p], layout=layout)[..., 0, :]
            for row, p in enumerate(positions)
        ],
        axis=-2,
    )
    np.testing.assert_allclose(grad_x.numpy(), inverse, atol=1e-12, rtol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradcheck_through_apply_rope(layout):
    x = torch.randn(
        2,
        4,
        6,
        dtype=torch.float64,
        generator=torch.Generator().manual_seed(5),
        requires_grad=True,
    )
    assert torch.autograd.gradcheck(
        lambda t: apply_rope(t, [0, 1, 2, 50], layout=layout), (x,)
    )
    assert torch.autograd.gradgradcheck(
        lambda t: apply_rope(t, [0, 1, 2, 50], layout=layout), (x,)
    )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_no_grad_and_inference_mode_take_the_fast_kernel(layout):
    x = torch.randn(5, 8, requires_grad=True)
    cos, sin = cos_sin(range(5), 8, torch.float32)
    with torch.no_grad():
        assert fast_rope.choose_kernel(x, cos, sin, layout) == FAST_KERNEL[layout]
        result = apply_rope(x, range(5), layout=layout)
    assert not result.requires_grad
    with torch.inference_mode():
        y = torch.randn(5, 8)
        assert fast_rope.choose_kernel(y, cos, sin, layout) == FAST_KERNEL[layout]
        np.testing.assert_allclose(
            apply_rope(y, range(5), layout=layout).numpy(),
            reference(y, range(5), layout),
            atol=2e-6,
            rtol=0,
        )


class MyTensor(torch.Tensor):
    """A user-defined torch.Tensor subclass."""


SUBCLASSES = {
    "Parameter": torch.nn.Parameter,
    "frozen-Parameter": lambda t: torch.nn.Parameter(t, requires_grad=False),
    "MyTensor": lambda t: t.as_subclass(MyTensor),
}
FAST_KERNEL_FUNCTIONS = (
    "rotate_interleaved_complex",
    "rotate_interleaved_complex_autograd",
    "rotate_half_preallocated",
)


def refuse_fast_kernels(monkeypatch):
    """Make every fast kernel fail the test if it runs."""

    def refuse(*args):
        raise AssertionError("a tensor subclass reached a fast kernel")

    for name in FAST_KERNEL_FUNCTIONS:
        monkeypatch.setattr(fast_rope, name, refuse)


@pytest.mark.parametrize("grad_mode", [torch.enable_grad, torch.no_grad])
@pytest.mark.parametrize("subclass", list(SUBCLASSES))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_tensor_subclasses_never_reach_the_fast_kernels(
    layout, subclass, grad_mode, monkeypatch
):
    make = SUBCLASSES[subclass]
    x = torch.randn(
        2, 5, 8, generator=torch.Generator().manual_seed(11), dtype=torch.float64
    )
    positions = [0, 3, 7, 100, 2048]
    cos, sin = cos_sin(positions, 8, torch.float64)
    sub = make(x.clone())
    with grad_mode():
        assert (
            fast_rope.choose_kernel(x, cos, sin, layout) == FAST_KERNEL[layout]
        )  # the plain tensor takes one
        assert fast_rope.choose_kernel(sub, cos, sin, layout) == "elementwise"
        assert (
            fast_rope.choose_kernel(x, make(cos.clone()), make(sin.clone()), layout)
            == "elementwise"
        )
        expected = rotate_pairs_elementwise(sub, cos, sin, layout)
        refuse_fast_kernels(monkeypatch)
        through_rotate_pairs = rotate_pairs(sub, cos, sin, layout)
        through_apply_rope = apply_rope(sub, positions, layout=layout)
    assert type(through_rotate_pairs) is type(expected) and torch.equal(
        through_rotate_pairs, expected
    )
    assert type(through_apply_rope) is type(expected)
    np.testing.assert_allclose(
        through_apply_rope.detach().as_subclass(torch.Tensor).numpy(),
        reference(x, positions, layout),
        atol=1e-12,
        rtol=0,
    )


@pytest.mark.filterwarnings(
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning"
)  # torch.func.jvp's own
@pytest.mark.parametrize("layout", LAYOUTS)
def test_torch_func_transforms_and_forward_mode_use_the_reference_formula(layout):
    x = torch.randn(
        3, 4, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(6)
    )
    cos, sin = cos_sin(range(4), 8, torch.float64)
    expected = rotate_pairs_elementwise(x, cos, sin, layout)
    torch.testing.assert_close(
        torch.func.vmap(lambda t: rotate_pairs(t, cos, sin, layout))(x), expected
    )
    tangent = torch.ones_like(x)
    _, jvp = torch.func.jvp(
        lambda t: rotate_pairs(t, cos, sin, layout), (x,), (tangent,)
    )
    torch.testing.assert_close(jvp, rotate_pairs_elementwise(tangent, cos, sin, layout))
    import torch.autograd.forward_ad as forward_ad

    with forward_ad.dual_level():
        dual = forward_ad.make_dual(x, tangent)
        assert fast_rope.choose_kernel(dual, cos, sin, layout) == "elementwise"
        primal, tangent_out = forward_ad.unpack_dual(
            rotate_pairs(dual, cos, sin, layout)
        )
    torch.testing.assert_close(primal, expected)
    torch.testing.assert_close(
        tangent_out, rotate_pairs_elementwise(tangent, cos, sin, layout)
    )


def test_complex_rotors_are_cos_plus_j_sin():
    cos, sin = cos_sin(range(6), 8, torch.float32)
    rotors = fast_rope.complex_rotors(cos, sin)
    assert rotors.dtype == torch.complex64 and rotors.shape == cos.shape
    assert torch.equal(rotors.real, cos) and torch.equal(rotors.imag, sin)
    cos64, sin64 = cos_sin(range(6), 8, torch.float64)
    assert fast_rope.complex_rotors(cos64, sin64[:1]).dtype == torch.complex128
    assert fast_rope.complex_rotors(cos64, sin64[:1]).shape == cos64.shape  # broadcast


def test_rotation_cos_sin_evaluates_torch_angles_in_their_dtype():
    from posenc.rotation import cos_sin as table_cos_sin

    table = torch.linspace(-20.0, 20.0, 41, dtype=torch.float32)
    cos32, sin32 = table_cos_sin(table)
    assert (
        cos32.dtype == torch.float32
        and torch.equal(cos32, torch.cos(table))
        and torch.equal(sin32, torch.sin(table))
    )
    cos_scaled, _ = table_cos_sin(table.double(), 0.5)
    assert torch.equal(cos_scaled, torch.cos(table.double()) * 0.5)


def test_rotate_by_rotors_is_the_interleaved_rotation_and_differentiable():
    cos, sin = cos_sin(range(6), 8, torch.float64)
    x = torch.randn(
        2, 12, 8, generator=torch.Generator().manual_seed(3), dtype=torch.float64
    )[:, ::2]  # strided
    assert fast_rope._complex_viewable(x) and not x.is_contiguous()
    x.requires_grad_()
    rotated = fast_rope.rotate_by_rotors(x, torch.complex(cos, sin))
    expected = rotate_pairs_elementwise(x, cos, sin, "interleaved")
    torch.testing.assert_close(rotated, expected, rtol=0, atol=1e-15)
    rotated.sum().backward()
    assert x.grad is not None and x.grad.shape == x.shape
    pairs = fast_rope.complex_pairs(x.detach().contiguous())
    assert pairs.shape == (2, 6, 4) and torch.equal(pairs.real, x.detach()[..., 0::2])


@settings(max_examples=60, deadline=None)
@given(
    batch=st.integers(1, 3),
    seq=st.integers(1, 9),
    half_dim=st.integers(1, 12),
    transposed=st.booleans(),
    layout=st.sampled_from(LAYOUTS),
    double=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_fast_kernels_equal_the_reference_formula_on_random_shapes(
    batch, seq, half_dim, transposed, layout, double, seed
):
    dtype = torch.float64 if double else torch.float32
    generator = torch.Generator().manual_seed(seed)
    dim = 2 * half_dim
    x = torch.randn(batch, seq, 2, dim, generator=generator, dtype=dtype)
    x = x.transpose(1, 2) if transposed else x.reshape(batch, 2, seq, dim)
    positions = torch.randint(0, 10**6, (seq,), generator=generator)
    cos, sin = cos_sin(positions, dim, dtype)
    result = rotate_pairs(x, cos, sin, layout)
    assert result.shape == x.shape and result.dtype == dtype and result.is_contiguous()
    expected = rotate_pairs_elementwise(x, cos, sin, layout)
    torch.testing.assert_close(result, expected, atol=TOLERANCE[dtype], rtol=0)
    if layout == "half":
        assert torch.equal(result, expected)


def test_a_transposed_input_that_needs_gradients_gives_a_contiguous_result():
    # (batch, seq, heads, dim) viewed as (batch, heads, seq, dim), under autograd
    x_bshd = torch.randn(2, 7, 3, 16, dtype=torch.float64, requires_grad=True)
    x = x_bshd.transpose(1, 2)
    positions = [0, 1, 5, 9, 100, 2048, 70000]
    cos, sin = cos_sin(positions, 16, torch.float64)
    assert fast_rope.choose_kernel(x, cos, sin, "interleaved") == "complex-autograd"
    result = apply_rope(x, positions)
    assert result.is_contiguous() and result.shape == x.shape and result.requires_grad
    np.testing.assert_allclose(
        result.detach().numpy(), reference(x, positions, "interleaved"), atol=1e-12
    )
    weights = torch.randn(result.shape, dtype=torch.float64)
    (result * weights).sum().backward()
    expected = torch.autograd.grad(
        (rotate_pairs_elementwise(x, cos, sin, "interleaved") * weights).sum(), x_bshd
    )[0]
    torch.testing.assert_close(x_bshd.grad, expected, atol=1e-12, rtol=0)


def test_the_private_functorch_probe_is_there_and_tells_wrapped_tensors():
    # the one private torch API posenc uses (see fast_rope's docstring): this test fails
    # when a torch release removes it or changes what it answers
    assert (
        fast_rope._is_functorch_wrapped
        is torch._C._functorch.is_functorch_wrapped_tensor
    )
    x = torch.randn(3, 4, 8)
    seen = []
    torch.func.vmap(lambda t: seen.append(fast_rope._is_functorch_wrapped(t)) or t)(x)
    assert seen == [True] and not fast_rope._is_functorch_wrapped(x)
