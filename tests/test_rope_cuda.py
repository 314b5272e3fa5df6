"""RoPE on a CUDA device: skipped where there is none (run by scripts/gpu_check.py).

The same rotations as on the CPU, against numpy float64; no synchronisation with the host
(torch.cuda.set_sync_debug_mode raises on any); one graph under torch.compile.
"""

import numpy as np
import pytest
import torch

from posenc import apply_rope, rope_inv_freq
from posenc.torch_rope import RotaryEmbedding

pytestmark = [
    pytest.mark.torch,  # make portability re-runs it (tests/conftest.py)
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
]
LAYOUTS = ["interleaved", "half"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cuda_rotation_equals_numpy_float64(layout, dtype):
    x = torch.randn(2, 4, 6, 32, dtype=dtype, device="cuda")
    positions = torch.tensor([[0, 1, 2, 3, 4, 5], [9, 99, 999, 9999, 10**5, 10**6]])
    got = apply_rope(x, positions.cuda(), layout=layout)
    assert got.device == x.device and got.dtype == dtype
    expected = np.stack(
        [
            apply_rope(row, list(p), layout=layout)
            for row, p in zip(x.double().cpu().numpy(), positions.numpy())
        ]
    )
    tolerance = 1e-12 if dtype == torch.float64 else 2e-6
    np.testing.assert_allclose(got.double().cpu().numpy(), expected, atol=tolerance)
    module = RotaryEmbedding(32, layout=layout).cuda()
    q_rot, _ = module(x, x, positions.cuda())
    np.testing.assert_allclose(q_rot.double().cpu().numpy(), expected, atol=tolerance)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_no_synchronisation_with_the_host(layout):
    x = torch.randn(2, 4, 64, 32, device="cuda", requires_grad=True)
    positions = torch.arange(64, device="cuda").expand(2, 64)
    inv_freq = torch.tensor(rope_inv_freq(32), device="cuda", requires_grad=True)
    module = RotaryEmbedding(32, layout=layout, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        out = apply_rope(x, positions, inv_freq=inv_freq, layout=layout)
        q_rot, k_rot = module(x, x, positions)
        (out.sum() + q_rot.sum()).backward()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert inv_freq.grad is not None and x.grad is not None


def test_one_graph_under_torch_compile_on_cuda():
    torch.compiler.reset()
    x = torch.randn(2, 4, 8, 16, device="cuda")
    positions = torch.arange(8, device="cuda")
    module = RotaryEmbedding(16, layout="half", device="cuda")
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager")
    q_rot, _ = compiled(x, x, positions)
    torch.testing.assert_close(q_rot, apply_rope(x, positions, layout="half"))
