"""posenc.rope against independent computations: math-module loops, the complex form, matrices."""

import cmath
import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from posenc import (
    add_sinusoidal_encoding,
    apply_rope,
    frequencies,
    rope_inv_freq,
    rope_matrix,
    rotation_matrix,
)
from posenc._validation import is_torch_tensor
from posenc.rope import rope_angles, rope_decay_bound, rotate_pairs
from posenc.torch_rope import RotaryEmbedding

pytestmark = pytest.mark.torch  # make portability re-runs it (tests/conftest.py)


def rope_by_loops(x, positions, base=10000.0, layout="interleaved", factor=1.0):
    """RoFormer eq. 34 written out pair by pair with math.cos/math.sin on Python floats."""
    x = np.asarray(x, dtype=np.float64)
    seq, dim = x.shape
    out = np.zeros_like(x)
    for row in range(seq):
        for i in range(dim // 2):
            angle = positions[row] * base ** (-2 * i / dim)
            first, second = (
                (2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + dim // 2)
            )
            a, b = float(x[row, first]), float(x[row, second])
            out[row, first] = factor * (a * math.cos(angle) - b * math.sin(angle))
            out[row, second] = factor * (a * math.sin(angle) + b * math.cos(angle))
    return out


def rope_by_complex_numbers(x, positions, base=10000.0):
    """Pairs (x[2i], x[2i+1]) as complex numbers times exp(j m theta_i), with cmath."""
    seq, dim = x.shape
    out = np.zeros_like(x)
    for row in range(seq):
        for i in range(dim // 2):
            z = complex(x[row, 2 * i], x[row, 2 * i + 1]) * cmath.exp(
                1j * positions[row] * base ** (-2 * i / dim)
            )
            out[row, 2 * i], out[row, 2 * i + 1] = z.real, z.imag
    return out


# ---------------------------------------------------------------- frequencies and matrices


def test_inv_freq_is_the_sinusoidal_frequency_formula():
    np.testing.assert_array_equal(rope_inv_freq(64), frequencies(64))
    expected = [10000.0 ** (-2 * i / 8) for i in range(4)]
    np.testing.assert_allclose(rope_inv_freq(8), expected, rtol=1e-15)
    np.testing.assert_allclose(
        rope_inv_freq(4, base=500000.0), [1.0, 500000.0**-0.5], rtol=1e-15
    )
    assert rope_inv_freq(6).shape == (3,) and rope_inv_freq(6).dtype == np.float64


def test_rotation_matrix_is_counter_clockwise_on_columns():
    np.testing.assert_allclose(
        rotation_matrix(math.pi / 2) @ [1.0, 0.0], [0.0, 1.0], atol=1e-16
    )
    np.testing.assert_allclose(
        rotation_matrix(0.3),
        [[math.cos(0.3), -math.sin(0.3)], [math.sin(0.3), math.cos(0.3)]],
    )


@given(st.floats(-50, 50), st.floats(-50, 50))
def test_rotation_matrix_group_laws(alpha, beta):
    r_a, r_b = rotation_matrix(alpha), rotation_matrix(beta)
    np.testing.assert_allclose(r_a.T, rotation_matrix(-alpha), atol=1e-15)
    np.testing.assert_allclose(r_a @ r_b, rotation_matrix(alpha + beta), atol=1e-12)
    np.testing.assert_allclose(r_a.T @ r_a, np.eye(2), atol=1e-15)
    assert np.linalg.det(r_a) == pytest.approx(1.0, abs=1e-14)


def test_rotation_matrix_of_an_array_stacks_blocks():
    angles = np.array([[0.0, 1.0, 2.0]])
    blocks = rotation_matrix(angles)
    assert blocks.shape == (1, 3, 2, 2)
    for k, angle in enumerate(angles[0]):
        np.testing.assert_array_equal(blocks[0, k], rotation_matrix(angle))


def test_rope_matrix_is_block_diagonal_with_one_angle_per_pair():
    dim, position = 8, 3
    matrix = rope_matrix(position, dim)
    for i in range(dim // 2):
        angle = position * 10000.0 ** (-2 * i / dim)
        block = [
            [math.cos(angle), -math.sin(angle)],
            [math.sin(angle), math.cos(angle)],
        ]
        np.testing.assert_allclose(
            matrix[2 * i : 2 * i + 2, 2 * i : 2 * i + 2], block, atol=1e-15
        )
    mask = np.kron(np.eye(dim // 2), np.ones((2, 2))).astype(bool)
    assert np.all(matrix[~mask] == 0.0)
    np.testing.assert_allclose(matrix.T @ matrix, np.eye(dim), atol=1e-15)


def test_rope_matrix_half_layout_is_a_permutation_of_the_interleaved_one():
    dim = 10
    perm = np.concatenate(
        [np.arange(0, dim, 2), np.arange(1, dim, 2)]
    )  # half index j <- interleaved perm[j]
    p = np.eye(dim)[perm]  # P x puts interleaved features in half order
    for position in (0, 1, 7, 1234):
        np.testing.assert_allclose(
            rope_matrix(position, dim, layout="half"),
            p @ rope_matrix(position, dim) @ p.T,
            atol=1e-15,
        )


@given(
    st.integers(-10_000, 10_000),
    st.integers(-10_000, 10_000),
    st.sampled_from([2, 4, 6, 16]),
)
def test_rope_matrices_compose_like_angles(m, n, dim):
    np.testing.assert_allclose(
        rope_matrix(m, dim).T @ rope_matrix(n, dim), rope_matrix(n - m, dim), atol=1e-9
    )


# ---------------------------------------------------------------- apply_rope versus independent forms


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize(
    "seq,dim,base", [(1, 2, 10000.0), (5, 8, 10000.0), (4, 6, 500.0), (3, 64, 500000.0)]
)
def test_apply_rope_matches_the_loop(seq, dim, base, layout):
    rng = np.random.default_rng(seq * 1000 + dim)
    x = rng.normal(size=(seq, dim))
    positions = rng.integers(0, 5000, size=seq)
    np.testing.assert_allclose(
        apply_rope(x, positions, base=base, layout=layout),
        rope_by_loops(x, positions, base, layout),
        atol=1e-12,
    )


def test_apply_rope_matches_the_complex_form_and_the_matrix_form():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 16))
    positions = np.array([0, 1, 2, 10, 999, 65535])
    rotated = apply_rope(x, positions)
    np.testing.assert_allclose(
        rotated, rope_by_complex_numbers(x, positions), atol=1e-12
    )
    by_matrix = np.stack(
        [rope_matrix(int(p), 16) @ row for p, row in zip(positions, x)]
    )
    np.testing.assert_allclose(rotated, by_matrix, atol=1e-12)
    by_matrix_half = np.stack(
        [rope_matrix(int(p), 16, layout="half") @ row for p, row in zip(positions, x)]
    )
    np.testing.assert_allclose(
        apply_rope(x, positions, layout="half"), by_matrix_half, atol=1e-12
    )


def test_apply_rope_keeps_norms_and_position_zero_is_the_identity():
    x = np.random.default_rng(1).normal(size=(2, 3, 12))
    rotated = apply_rope(x, [5, 80, 3000])
    np.testing.assert_allclose(
        np.linalg.norm(rotated, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-13
    )
    np.testing.assert_array_equal(apply_rope(x, [0, 0, 0]), x)


def test_batch_and_head_dimensions_share_the_positions():
    x = np.random.default_rng(2).normal(size=(2, 3, 5, 8))
    positions = [4, 1, 0, 9, 2]
    rotated = apply_rope(x, positions)
    for b in range(2):
        for h in range(3):
            np.testing.assert_allclose(
                rotated[b, h], rope_by_loops(x[b, h], positions), atol=1e-12
            )


def test_custom_inv_freq_and_attention_factor():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 8))
    positions = [0, 3, 7, 100]
    inv_freq = (
        rope_inv_freq(8) / 4.0
    )  # position interpolation by a factor 4: position 4p looks like p
    np.testing.assert_allclose(
        apply_rope(x, [0, 12, 28, 400], inv_freq=inv_freq),
        apply_rope(x, positions),
        atol=1e-12,
    )
    angles = rope_angles(positions, inv_freq)
    np.testing.assert_allclose(
        angles,
        np.array(positions)[:, None] * rope_inv_freq(8)[None, :] / 4.0,
        rtol=1e-15,
    )
    expected = np.stack(
        [rope_matrix(p, 8, inv_freq=inv_freq) @ row for p, row in zip(positions, x)]
    )
    np.testing.assert_allclose(
        apply_rope(x, positions, inv_freq=inv_freq), expected, atol=1e-12
    )
    np.testing.assert_allclose(
        apply_rope(x, positions, attention_factor=1.3),
        1.3 * apply_rope(x, positions),
        rtol=1e-14,
    )
    np.testing.assert_allclose(
        apply_rope(x, positions, attention_factor=1.3, layout="half"),
        rope_by_loops(x, positions, layout="half", factor=1.3),
        atol=1e-12,
    )


@given(
    st.integers(0, 100_000),
    st.integers(0, 100_000),
    st.integers(-50_000, 50_000),
    st.sampled_from([2, 8, 32]),
    st.sampled_from(["interleaved", "half"]),
    st.integers(0, 2**32 - 1),
)
def test_score_depends_only_on_the_offset(m, n, shift, dim, layout, seed):
    """q'.k' for positions (m, n) equals that for (m + s, n + s) and q^T R_{n-m} k."""
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(1, dim)), rng.normal(size=(1, dim))

    def score(a, b):
        return float(
            apply_rope(q, [a], layout=layout)[0] @ apply_rope(k, [b], layout=layout)[0]
        )

    expected = float(q[0] @ rope_matrix(n - m, dim, layout=layout) @ k[0])
    scale = float(np.linalg.norm(q) * np.linalg.norm(k))
    assert abs(score(m, n) - expected) <= 1e-9 * scale
    assert abs(score(m + shift, n + shift) - expected) <= 1e-9 * scale


# ---------------------------------------------------------------- types, dtypes, torch, precision


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_numpy_input_keeps_type_dtype_and_shape(dtype):
    x = np.random.default_rng(4).normal(size=(2, 3, 4)).astype(dtype)
    rotated = apply_rope(x, [0, 1, 2])
    assert (
        type(rotated) is np.ndarray
        and rotated.dtype == dtype
        and rotated.shape == x.shape
    )


@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64]
)
@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_torch_input_keeps_type_dtype_shape_and_agrees_with_numpy(dtype, layout):
    x64 = np.random.default_rng(5).normal(size=(2, 3, 7, 8))
    positions = torch.tensor([0, 1, 2, 3, 50, 600, 7000])
    rotated = apply_rope(torch.from_numpy(x64).to(dtype), positions, layout=layout)
    assert (
        isinstance(rotated, torch.Tensor)
        and rotated.dtype == dtype
        and tuple(rotated.shape) == x64.shape
    )
    reference = apply_rope(x64, positions.numpy(), layout=layout)
    tolerance = {
        torch.float64: 1e-12,
        torch.float32: 1e-5,
        torch.float16: 1e-2,
        torch.bfloat16: 6e-2,
    }[dtype]
    np.testing.assert_allclose(rotated.double().numpy(), reference, atol=tolerance)


def test_torch_path_is_differentiable():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    apply_rope(x, [1, 2, 3]).pow(2).sum().backward()
    # a rotation keeps the norm, so d|Rx|^2/dx = 2x
    torch.testing.assert_close(x.grad, 2 * x.detach())


class MyTensor(torch.Tensor):
    """A user-defined torch.Tensor subclass: its type lives in this module, not in torch's."""


def test_torch_detection_takes_every_tensor_subclass_and_nothing_else():
    for tensor in (
        torch.ones(2),
        torch.ones(2).as_subclass(MyTensor),
        torch.nn.Parameter(torch.ones(2)),
    ):
        assert is_torch_tensor(tensor)
    for other in (np.ones(2), [1.0, 2.0], torch.Size([2, 3]), torch.float32, torch):
        assert not is_torch_tensor(other)


def rotate_with(entry_point, x, positions, layout):
    """Rotate x by RoPE through one of the three public entry points that take torch tensors."""
    if entry_point == "apply_rope":
        return apply_rope(x, positions, layout=layout)
    if entry_point == "rotate_pairs":
        angles = rope_angles(positions, rope_inv_freq(x.shape[-1]))
        return rotate_pairs(
            x,
            torch.from_numpy(np.cos(angles)),
            torch.from_numpy(np.sin(angles)),
            layout,
        )
    return RotaryEmbedding(x.shape[-1], layout=layout).rotate(x, positions)


ENTRY_POINTS = ["apply_rope", "rotate_pairs", "RotaryEmbedding.rotate"]


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_a_user_defined_tensor_subclass_is_rotated_and_keeps_its_type(
    entry_point, layout
):
    values = np.random.default_rng(9).normal(size=(2, 5, 8))
    positions = [0, 4, 9, 300, 70000]
    x = torch.from_numpy(values).as_subclass(MyTensor)
    rotated = rotate_with(entry_point, x, positions, layout)
    assert (
        type(rotated) is MyTensor
        and rotated.dtype == torch.float64
        and rotated.shape == x.shape
    )
    np.testing.assert_allclose(
        rotated.as_subclass(torch.Tensor).numpy(),
        apply_rope(values, positions, layout=layout),
        atol=1e-12,
        rtol=0,
    )


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_a_learned_parameter_is_rotated_and_gradients_reach_it(entry_point, layout):
    values = np.random.default_rng(10).normal(size=(5, 8))
    positions = [1, 2, 3, 500, 6]
    parameter = torch.nn.Parameter(torch.from_numpy(values.copy()))
    rotated = rotate_with(entry_point, parameter, positions, layout)
    # what torch's own arithmetic returns for a Parameter (parameter * 1): a plain tensor in the graph
    assert type(rotated) is torch.Tensor and rotated.grad_fn is not None
    np.testing.assert_allclose(
        rotated.detach().numpy(),
        apply_rope(values, positions, layout=layout),
        atol=1e-12,
        rtol=0,
    )
    rotated.pow(2).sum().backward()  # a rotation keeps the norm: d|Rx|^2/dx = 2x
    torch.testing.assert_close(
        parameter.grad, 2 * parameter.detach(), atol=1e-12, rtol=0
    )


def test_numpy_only_arguments_reject_every_torch_tensor_naming_the_argument():
    for tensor in (
        torch.ones(2, 4, dtype=torch.float64),
        torch.ones(2, 4, dtype=torch.float64).as_subclass(MyTensor),
        torch.nn.Parameter(torch.ones(2, 4, dtype=torch.float64)),
    ):
        with pytest.raises(
            TypeError, match="^embeddings must be a numpy array, got a torch tensor"
        ):
            add_sinusoidal_encoding(tensor)
    with pytest.raises(TypeError, match="^positions must hold integers"):
        apply_rope(np.ones((2, 4)), torch.tensor([0.0, 1.0]).as_subclass(MyTensor))


def test_float32_at_position_two_million_is_within_1e_5_of_float64():
    x64 = np.random.default_rng(6).normal(size=(4, 128))
    positions = [2_000_000, 1_999_999, 1_000_000, 123_456]
    reference = apply_rope(x64, positions)
    np.testing.assert_allclose(
        apply_rope(x64.astype(np.float32), positions), reference, atol=1e-5
    )
    torch_result = (
        apply_rope(torch.from_numpy(x64).float(), torch.tensor(positions))
        .double()
        .numpy()
    )
    np.testing.assert_allclose(torch_result, reference, atol=1e-5)
    # the test can fail: angles formed in float32 are far off at this position
    angles32 = np.float32(positions[0]) * rope_inv_freq(128).astype(np.float32)
    wrong = np.cos(angles32.astype(np.float64)) - np.cos(
        positions[0] * rope_inv_freq(128)
    )
    assert np.max(np.abs(wrong)) > 1e-2


def test_float64_angles_are_right_to_1e_6_rad_at_position_one_million():
    angles = rope_angles([1_000_000], rope_inv_freq(64))[0]
    exact = [1_000_000 * 10000.0 ** (-2 * i / 64) for i in range(32)]
    assert np.max(np.abs(angles - exact)) < 1e-6


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call,error,name",
    [
        (lambda: rope_inv_freq(5), ValueError, "dim"),
        (lambda: rope_inv_freq(0), ValueError, "dim"),
        (lambda: rope_inv_freq(4.0), TypeError, "dim"),
        (lambda: rope_inv_freq(4, base=-1.0), ValueError, "base"),
        (lambda: rope_matrix(1, 3), ValueError, "dim"),
        (lambda: rope_matrix(1.5, 4), TypeError, "position"),
        (lambda: rope_matrix(1, 4, layout="neox"), ValueError, "layout"),
        (lambda: rope_matrix(1, 4, inv_freq=[1.0]), ValueError, "inv_freq"),
        (lambda: rotation_matrix("a"), TypeError, "angle"),
        (lambda: rotation_matrix(np.nan), ValueError, "angle"),
        (lambda: apply_rope(np.ones((2, 3)), [0, 1]), ValueError, "x"),
        (lambda: apply_rope(np.ones((2, 4)), [0, 1, 2]), ValueError, "positions"),
        (lambda: apply_rope(np.ones((2, 4)), [[0, 1]]), ValueError, "positions"),
        (lambda: apply_rope(np.ones((2, 4)), 1), ValueError, "positions"),
        (lambda: apply_rope(np.ones((2, 4)), [0.0, 1.0]), TypeError, "positions"),
        (lambda: apply_rope(np.ones((2, 4)), [True, False]), TypeError, "positions"),
        (
            lambda: apply_rope(np.ones((2, 4)), torch.tensor([0.0, 1.0])),
            TypeError,
            "positions",
        ),
        (lambda: apply_rope(np.ones((2, 4)), "ab"), TypeError, "positions"),
        (
            lambda: apply_rope(np.ones((2, 4)), [0, 1], layout="rotate_half"),
            ValueError,
            "layout",
        ),
        (
            lambda: apply_rope(np.ones((2, 4)), [0, 1], inv_freq=[1.0, 2.0, 3.0]),
            ValueError,
            "inv_freq",
        ),
        (
            lambda: apply_rope(np.ones((2, 4)), [0, 1], inv_freq=[1.0, np.inf]),
            ValueError,
            "inv_freq",
        ),
        (
            lambda: apply_rope(np.ones((2, 4)), [0, 1], attention_factor=0.0),
            ValueError,
            "attention_factor",
        ),
        (lambda: apply_rope(np.ones((2, 4)), [0, 1], base=0.0), ValueError, "base"),
        (lambda: apply_rope(np.ones((2, 4), dtype=np.int64), [0, 1]), TypeError, "x"),
        (
            lambda: apply_rope(torch.ones(2, 4, dtype=torch.int32), [0, 1]),
            TypeError,
            "x",
        ),
        (lambda: apply_rope(np.ones((2, 4), dtype=complex), [0, 1]), TypeError, "x"),
        (lambda: apply_rope([[1.0, 2.0]], [0]), TypeError, "x"),
        (lambda: apply_rope(np.ones(4), [0]), ValueError, "x"),
    ],
)
def test_bad_input_names_the_argument(call, error, name):
    with pytest.raises(error, match=f"^{name} must"):
        call()


# ---------------------------------------------------------------- RoFormer's long-term decay bound


def test_decay_bound_at_distance_zero_and_by_loops():
    dim = 8
    bound = rope_decay_bound([0, 1, 5, -5], dim)
    assert bound[0] == pytest.approx(
        (dim / 2 + 1) / 2
    )  # S_j = j at distance 0: mean of 1 .. dim/2
    for value, distance in zip(bound, [0, 1, 5, -5]):
        sums = [
            abs(
                sum(
                    cmath.exp(1j * distance * 10000.0 ** (-2 * i / dim))
                    for i in range(j)
                )
            )
            for j in range(1, dim // 2 + 1)
        ]
        assert value == pytest.approx(sum(sums) / (dim // 2), rel=1e-12)


@given(
    st.integers(-5000, 5000), st.integers(0, 2**32 - 1), st.sampled_from([4, 16, 64])
)
def test_decay_bound_bounds_the_rotated_score(distance, seed, dim):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(1, dim)), rng.normal(size=(1, dim))
    score = float(
        apply_rope(q, [0])[0] @ apply_rope(k, [-distance])[0]
    )  # m - n = distance
    h = np.append(
        (q[0, 0::2] + 1j * q[0, 1::2]) * np.conj(k[0, 0::2] + 1j * k[0, 1::2]), 0.0
    )  # h_{dim/2} = 0
    bound = (
        np.max(np.abs(np.diff(h))) * (dim // 2) * rope_decay_bound([distance], dim)[0]
    )
    assert abs(score) <= bound * (1 + 1e-12) + 1e-12
