"""posenc.bench: every form it times computes RoPE, and the clock alternates fairly. No timings asserted."""

import numpy as np
import pytest
import torch

from posenc import apply_rope, rope_inv_freq, rope_matrix
from posenc.bench import clock, forms

pytestmark = pytest.mark.torch  # make portability re-runs it (tests/conftest.py)


def test_matrices_are_the_block_diagonal_rope_matrices():
    positions = [0, 1, 7, 300]
    matrices = forms.rope_matrices(positions, 8, dtype=torch.float64)
    assert matrices.shape == (4, 8, 8)
    for matrix, position in zip(matrices.numpy(), positions):
        np.testing.assert_allclose(matrix, rope_matrix(position, 8), atol=1e-15)


@pytest.mark.parametrize("dtype,atol", [(torch.float64, 1e-12), (torch.float32, 2e-6)])
def test_every_form_rotates_like_apply_rope(dtype, atol):
    x = torch.randn(
        2, 3, 6, 16, generator=torch.Generator().manual_seed(0), dtype=dtype
    )
    positions = np.array([0, 1, 2, 40, 999, 65535])
    interleaved = apply_rope(x.double().numpy(), positions)
    half = apply_rope(x.double().numpy(), positions, layout="half")
    complex_dtype = torch.complex128 if dtype == torch.float64 else torch.complex64
    by_matrices = forms.rotate_by_matrices(
        x, forms.rope_matrices(positions, 16, dtype=dtype)
    )
    by_complex = forms.rotate_complex(
        x, forms.rotor_table(positions, 16, dtype=complex_dtype)
    )
    by_transformers = forms.transformers_formula(
        x, *forms.transformers_cos_sin(positions, 16, dtype=dtype)
    )
    for result, expected in [
        (by_matrices, interleaved),
        (by_complex, interleaved),
        (by_transformers, half),
    ]:
        assert result.shape == x.shape and result.dtype == dtype
        np.testing.assert_allclose(result.double().numpy(), expected, atol=atol, rtol=0)


def test_cos_sin_tables_and_rotors_are_cast_from_float64():
    positions = np.arange(0, 70000, 7000)
    angles = positions[:, None] * rope_inv_freq(8)[None, :]
    cos, sin = forms.cos_sin_tables(positions, 8)
    assert cos.dtype == torch.float32 and cos.shape == (10, 4)
    np.testing.assert_array_equal(cos.numpy(), np.cos(angles).astype(np.float32))
    np.testing.assert_array_equal(sin.numpy(), np.sin(angles).astype(np.float32))
    for dtype, real in ((torch.complex64, np.float32), (torch.complex128, np.float64)):
        rotors = forms.rotor_table(positions, 8, dtype=dtype)
        assert rotors.dtype == dtype
        np.testing.assert_array_equal(rotors.real.numpy(), np.cos(angles).astype(real))
        np.testing.assert_array_equal(rotors.imag.numpy(), np.sin(angles).astype(real))
    with pytest.raises(ValueError, match="^dtype must"):
        forms.rotor_table(positions, 8, dtype=torch.float32)


def test_rotate_half_and_the_floor():
    x = torch.arange(6.0).reshape(1, 6)
    assert forms.rotate_half_as_in_transformers(x).tolist() == [
        [-3.0, -4.0, -5.0, 0.0, 1.0, 2.0]
    ]
    assert torch.equal(forms.memory_floor(x), 2 * x)


def test_time_alternating_rotates_the_order_and_drops_warmup_rounds():
    calls = []
    candidates = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    times = clock.time_alternating(candidates, rounds=4, warmup=2)
    assert calls == list("abcbcacababcbcacab")  # rounds 0..5, each shifted by one
    assert {name: len(values) for name, values in times.items()} == {
        "a": 4,
        "b": 4,
        "c": 4,
    }
    assert all(value >= 0 for values in times.values() for value in values)


def test_median_ratios_divide_by_the_baseline_median():
    times = {
        "floor": [1.0, 3.0, 2.0],
        "slow": [5.0, 4.0, 100.0],
        "fast": [1.0, 1.0, 1.0],
    }
    assert clock.median_ratios(times, "floor") == {
        "floor": 1.0,
        "slow": 2.5,
        "fast": 0.5,
    }


def test_machine_description_names_cpu_cores_and_torch():
    machine = clock.machine_description()
    assert set(machine) == {"cpu", "cores", "torch", "python", "load_average"}
    assert (
        machine["torch"] == torch.__version__
        and machine["cores"] >= 1
        and machine["cpu"]
    )


@pytest.mark.kernel_independent
def test_memory_traffic_charges_each_operator_its_tensors():
    x = torch.randn(4, 6, 8)
    size = x.numel() * 4
    assert clock.memory_traffic(lambda: x * 2.0) == {
        "ops": ["mul"],
        "bytes_read": size,
        "bytes_written": size,
    }
    cos, sin = forms.transformers_cos_sin(range(6), 8)
    traffic = clock.memory_traffic(lambda: forms.transformers_formula(x, cos, sin))
    assert traffic["ops"] == ["mul", "neg", "cat", "mul", "add"]
    # x*cos: x + table -> x; neg: half -> half; cat: 2 halves -> x; *sin: x + table -> x; add: 2x -> x
    table = cos.numel() * 4
    assert traffic["bytes_written"] == size + size // 2 + size + size + size
    assert (
        traffic["bytes_read"]
        == (size + table) + size // 2 + size + (size + table) + 2 * size
    )
    # views and allocations are free; an out= argument is written, not read
    out = torch.empty_like(x)
    traffic = clock.memory_traffic(
        lambda: torch.mul(x.transpose(0, 1), 2.0, out=out.transpose(0, 1))
    )
    assert traffic == {"ops": ["mul"], "bytes_read": size, "bytes_written": size}


@pytest.mark.parametrize(
    "call,error,name",
    [
        (lambda: clock.time_alternating({}, rounds=1), ValueError, "candidates"),
        (
            lambda: clock.time_alternating({"a": int}, rounds=0),
            ValueError,
            "rounds",
        ),
        (
            lambda: clock.time_alternating({"a": int}, rounds=1, warmup=-1),
            ValueError,
            "warmup",
        ),
        (
            lambda: clock.time_alternating({"a": int}, rounds=1, warmup=1.5),
            TypeError,
            "warmup",
        ),
        (
            lambda: clock.time_alternating({"a": int}, rounds=1, warmup=True),
            TypeError,
            "warmup",
        ),
        (lambda: clock.median_ratios({"a": [1.0]}, "b"), ValueError, "baseline"),
        (lambda: forms.rope_matrices([0, 1], 7), ValueError, "dim"),
    ],
)
def test_bad_input_names_the_argument(call, error, name):
    with pytest.raises(error, match=f"^{name} must"):
        call()
