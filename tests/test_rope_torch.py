"""RoPE as torch code: tensor positions on the device, the meta device, torch.compile,
learned frequencies, the dtype policy, and rotary_dim against transcriptions of GPT-NeoX,
GPT-J and Phi as transformers writes them."""

import numpy as np
import pytest
import torch

from posenc import apply_rope, rope_inv_freq, rotation
from posenc.rope import rotate_pairs
from posenc.torch_rope import RotaryEmbedding

pytestmark = pytest.mark.torch  # make portability re-runs it (tests/conftest.py)

LAYOUTS = ["interleaved", "half"]


def numpy_rope_per_row(x, positions, layout, **options):
    """float64 numpy apply_rope of each batch row at its own (seq,) positions."""
    x = x.detach().double().numpy()
    return np.stack(
        [
            apply_rope(row, list(p), layout=layout, **options)
            for row, p in zip(x, np.asarray(positions))
        ]
    )


# ---------------------------------------------------------------- tensor positions


@pytest.mark.parametrize("layout", LAYOUTS)
def test_batch_seq_positions_rotate_each_row_at_its_own_positions(layout):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, 5, 16, generator=generator, dtype=torch.float64)
    positions = torch.tensor([[0, 1, 2, 3, 4], [7, 8, 9, 10, 11], [100, 3, 3, 0, 9]])
    expected = numpy_rope_per_row(x, positions, layout)
    got = apply_rope(x, positions, layout=layout)
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-12, rtol=0)
    np.testing.assert_allclose(  # numpy positions of the same shape, numpy x
        apply_rope(x.numpy(), positions.numpy(), layout=layout), expected, atol=1e-12
    )
    rope = RotaryEmbedding(16, layout=layout)
    q_rot, k_rot = rope(x, x[:, :2], positions)
    np.testing.assert_allclose(q_rot.numpy(), expected, atol=1e-12, rtol=0)
    np.testing.assert_allclose(k_rot.numpy(), expected[:, :2], atol=1e-12, rtol=0)
    # the rows differ: one shared (seq,) vector would not give this
    assert np.max(np.abs(expected[1] - apply_rope(x[1].numpy(), range(5)))) > 0.1


def test_seq_positions_as_a_tensor_equal_them_as_a_list():
    x = torch.randn(2, 3, 6, 8)
    positions = [5, 0, 2, 2, 999, 4]
    for layout in LAYOUTS:
        torch.testing.assert_close(
            apply_rope(x, torch.tensor(positions), layout=layout),
            apply_rope(x, positions, layout=layout),
            atol=0,
            rtol=0,
        )


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16]
)
@pytest.mark.parametrize("attention_factor", [1.0, 1.3])
def test_host_and_device_positions_give_the_same_bits(dtype, attention_factor):
    # positions given as numbers on the CPU take numpy for the angles and casts; as a
    # tensor, torch on its device: the same numbers either way, and the module's too
    x = torch.randn(2, 3, 50, 16).to(dtype)
    positions = list(range(0, 500_000, 10_000))
    for layout in LAYOUTS:
        options = {"attention_factor": attention_factor, "layout": layout}
        host = apply_rope(x, positions, **options)
        assert torch.equal(host, apply_rope(x, torch.tensor(positions), **options))
        module = RotaryEmbedding(16, **options)
        assert torch.equal(host, module.rotate(x, torch.tensor(positions)))
        assert torch.equal(host, module.rotate(x, positions))


@pytest.mark.parametrize(
    "call,error,name",
    [
        (lambda x: apply_rope(x, torch.arange(5.0)), TypeError, "positions"),
        (lambda x: apply_rope(x, torch.zeros(5, dtype=torch.bool)), TypeError, "positions"),
        (lambda x: apply_rope(x, torch.arange(4)), ValueError, "positions"),
        (lambda x: apply_rope(x, torch.zeros(3, 5, dtype=torch.int64)), ValueError, "positions"),
        (lambda x: apply_rope(x, torch.zeros(2, 2, 5, dtype=torch.int64)), ValueError, "positions"),
        (lambda x: apply_rope(x, torch.arange(5, device="meta")), ValueError, "positions"),
        (lambda x: apply_rope(x, range(5), rotary_dim=3), ValueError, "rotary_dim"),
        (lambda x: apply_rope(x, range(5), rotary_dim=10), ValueError, "rotary_dim"),
        (lambda x: apply_rope(x, range(5), inv_freq=torch.ones(3)), ValueError, "inv_freq"),
        (lambda x: apply_rope(x, range(5), inv_freq=torch.ones(4, dtype=torch.int64)), TypeError, "inv_freq"),
        (lambda x: RotaryEmbedding(8).rotate(x, torch.arange(5.0)), TypeError, "positions"),
        (lambda x: RotaryEmbedding(8).rotate(x, torch.arange(4)), ValueError, "positions"),
        (lambda x: RotaryEmbedding(8).tables(), ValueError, "seq"),
        (lambda x: RotaryEmbedding(8, rotary_dim=12), ValueError, "rotary_dim"),
    ],
)  # fmt: skip
def test_bad_tensor_positions_and_rotary_dims_name_the_argument(call, error, name):
    with pytest.raises(error, match=f"^{name} must"):
        call(torch.ones(2, 3, 5, 8))


# ---------------------------------------------------------------- the meta device


def test_meta_tensors_fail_on_any_host_round_trip():
    # what makes the tests below meaningful: a meta tensor has no data to read
    positions = torch.arange(5, device="meta")
    for read in (lambda: positions.cpu(), lambda: positions.tolist(), positions.max):
        with pytest.raises((NotImplementedError, RuntimeError)):
            value = read()
            if value.device.type == "meta":  # max() stays on meta: reading it fails
                value.item()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_apply_rope_and_the_module_run_on_the_meta_device(layout):
    x = torch.empty(2, 4, 5, 16, device="meta")
    for positions in (
        torch.arange(5, device="meta"),
        torch.zeros(2, 5, dtype=torch.int64, device="meta"),
    ):
        for inv_freq in (None, torch.ones(8, device="meta", requires_grad=True)):
            out = apply_rope(x, positions, layout=layout, inv_freq=inv_freq)
            assert out.device.type == "meta" and out.shape == x.shape
        out = apply_rope(x, positions, layout=layout, rotary_dim=8)
        assert out.device.type == "meta" and out.shape == x.shape
    rope = RotaryEmbedding(16, layout=layout, rotary_dim=8, max_positions=4).to("meta")
    assert rope.inv_freq.device.type == "meta" and rope.cos_cached.device.type == "meta"
    for positions in (None, torch.arange(5, device="meta")):
        q_rot, k_rot = rope(x, x, positions)  # seq 5 > 4: the cache grows on meta
        assert q_rot.device.type == "meta" and q_rot.shape == x.shape
    assert rope.cached_positions == 8


# ---------------------------------------------------------------- torch.compile


@pytest.mark.parametrize("layout", LAYOUTS)
def test_apply_rope_compiles_to_one_graph(layout):
    torch.compiler.reset()
    x = torch.randn(2, 3, 5, 8, dtype=torch.float64)
    positions = torch.tensor([[0, 1, 2, 3, 4], [9, 8, 7, 6, 5]])
    inv_freq = torch.from_numpy(rope_inv_freq(8, base=500.0))

    def rotate(x, positions, inv_freq):
        return apply_rope(x, positions, inv_freq=inv_freq, layout=layout)

    compiled = torch.compile(rotate, fullgraph=True, backend="aot_eager")
    expected = numpy_rope_per_row(x, positions, layout, inv_freq=inv_freq.numpy())
    np.testing.assert_allclose(
        compiled(x, positions, inv_freq).numpy(), expected, atol=1e-12, rtol=0
    )


def test_the_module_compiles_to_one_graph():
    torch.compiler.reset()
    layout = "half"
    x = torch.randn(2, 3, 5, 8, dtype=torch.float64)
    positions = torch.tensor([[0, 1, 2, 3, 4], [9, 8, 7, 6, 5]])
    rope = RotaryEmbedding(8, layout=layout, max_positions=8)
    module = torch.compile(lambda q, k: rope(q, k), fullgraph=True, backend="aot_eager")
    q_rot, _ = module(x, x)
    torch.testing.assert_close(q_rot, apply_rope(x, range(5), layout=layout))
    with_positions = torch.compile(rope, fullgraph=True, backend="aot_eager")
    q_rot, _ = with_positions(x, x, positions)
    np.testing.assert_allclose(
        q_rot.numpy(), numpy_rope_per_row(x, positions, layout), atol=1e-12, rtol=0
    )


# ---------------------------------------------------------------- learned frequencies


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_learned_inv_freq_receives_its_gradient(layout):
    x = torch.randn(
        2, 6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1)
    )
    positions = torch.tensor([0, 1, 2, 5, 40, 300])
    inv_freq = torch.tensor(rope_inv_freq(8), requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda t: apply_rope(x, positions, inv_freq=t, layout=layout), (inv_freq,)
    )
    # d/d theta_i of sum(R(m theta) x . w) at theta, against a central difference
    weights = torch.randn(
        x.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(2)
    )
    (
        apply_rope(x, positions, inv_freq=inv_freq, layout=layout) * weights
    ).sum().backward()
    # step 1e-7: the difference's own error is at most 1.7e-8 relative over 150 random
    # weights (with 1e-6 it reached 2.1e-6, position 300 cubed in the truncation term)
    step = 1e-7
    for i in range(4):
        bump = torch.zeros(4, dtype=torch.float64)
        bump[i] = step
        with torch.no_grad():
            up = (
                apply_rope(x, positions, inv_freq=inv_freq + bump, layout=layout)
                * weights
            ).sum()
            down = (
                apply_rope(x, positions, inv_freq=inv_freq - bump, layout=layout)
                * weights
            ).sum()
        difference = (up - down) / (2 * step)
        assert abs(inv_freq.grad[i] - difference) < 1e-6 * max(1.0, abs(difference))
    # and through the module, as an nn.Parameter it registers
    learned = torch.nn.Parameter(torch.tensor(rope_inv_freq(8), dtype=torch.float32))
    rope = RotaryEmbedding(8, inv_freq=learned, layout=layout)
    assert [p is learned for p in rope.parameters()] == [True]
    q, _ = rope(x.float(), x.float())
    (q * weights.float()).sum().backward()
    assert learned.grad is not None and torch.all(learned.grad != 0)


# ---------------------------------------------------------------- the dtype policy


def test_module_half_keeps_the_angles_in_float64():
    rope = RotaryEmbedding(8, max_positions=16)
    before = rope.cos_cached.clone()
    rope.half()
    assert (
        rope.inv_freq.dtype == torch.float64 and rope.cos_cached.dtype == torch.float64
    )
    assert torch.equal(rope.cos_cached, before)
    rope.to(torch.bfloat16)
    assert rope.cos_cached.dtype == torch.float64
    # at a far position the table cast to float16 last is the float64 cosine rounded once
    x = torch.randn(1, 2, 8).half()
    far = [1_000_000, 1_000_001]
    cos, _ = rope.tables(far, dtype=torch.float16)
    exact = np.cos(np.outer(far, rope_inv_freq(8)))
    assert torch.equal(cos, torch.from_numpy(exact).half())
    torch.testing.assert_close(rope.rotate(x, far), apply_rope(x, far), atol=0, rtol=0)
    # frequencies cast to float16 by half(), as a float buffer would be, are off by radians
    half_theta = rope_inv_freq(8).astype(np.float16).astype(np.float64)
    assert np.max(np.abs(np.cos(np.outer(far, half_theta)) - exact)) > 0.5


def test_tables_are_cast_to_the_input_dtype_last():
    rope = RotaryEmbedding(8, attention_factor=1.3)
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        cos, sin = rope.tables(torch.tensor([3, 70_000]), dtype=dtype)
        angles = np.outer([3, 70_000], rope_inv_freq(8))
        assert cos.dtype == dtype
        assert torch.equal(cos, torch.from_numpy(1.3 * np.cos(angles)).to(dtype))
        assert torch.equal(sin, torch.from_numpy(1.3 * np.sin(angles)).to(dtype))


def test_without_float64_the_angles_lose_what_the_docstring_says(monkeypatch):
    # a device without float64 (MPS), simulated on the CPU
    theta = rope_inv_freq(128)
    losses = {}
    for m in (1000, 1_000_000):
        positions = torch.arange(m - 64, m + 1)
        exact = rotation.rope_angles(positions, theta)
        with monkeypatch.context() as patch:
            patch.setattr(rotation, "NO_FLOAT64_DEVICES", ("cpu",))
            assert rotation.angle_dtype(torch.device("cpu")) == torch.float32
            single = rotation.rope_angles(positions, theta)
        assert exact.dtype == torch.float64 and single.dtype == torch.float32
        losses[m] = (single.double() - exact).abs().max().item()
        assert 0.5 * m * 2**-24 < losses[m] < 1.2 * m * 2**-24  # about m * 2**-24 rad
    assert f"{losses[1000]:.0e}" == "6e-05" and f"{losses[1_000_000]:.2f}" == "0.06"
    assert "6e-5 rad at m = 1000, 0.06 rad at m = 10**6" in " ".join(
        rotation.__doc__.split()
    )


# ---------------------------------------------------------------- rotary_dim


def rotate_half_transcribed(x):
    """transformers' ``rotate_half`` (GPT-NeoX, Phi), transcribed: (x1, x2) -> (-x2, x1)."""
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def gpt_neox_partial_rope_transcribed(x, positions, rotary_pct, base):
    """A transcription of GPT-NeoX's partial rotary in transformers (modeling_gpt_neox.py).

    rotary_ndims = int(head_size * rotary_pct); inv_freq over rotary_ndims; cos and sin
    of the angles concatenated twice; x_rot * cos + rotate_half(x_rot) * sin on the first
    rotary_ndims features, the rest passed through. float64 here.
    """
    rotary_ndims = int(x.shape[-1] * rotary_pct)
    inv_freq = 1.0 / (
        base ** (torch.arange(0, rotary_ndims, 2, dtype=torch.float64) / rotary_ndims)
    )
    freqs = torch.outer(positions.double(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    x_rot, x_pass = x[..., :rotary_ndims], x[..., rotary_ndims:]
    x_rot = x_rot * emb.cos() + rotate_half_transcribed(x_rot) * emb.sin()
    return torch.cat((x_rot, x_pass), dim=-1)


def phi_partial_rope_transcribed(x, positions, partial_rotary_factor, base):
    """A transcription of Phi's partial rotary in transformers (modeling_phi.py).

    The rotary embedding's dim is int(partial_rotary_factor * head_dim); query_rot,
    query_pass split there; apply_rotary_pos_emb (rotate_half) on query_rot; then
    concatenated back. The same rule as GPT-NeoX's, reached from another config field.
    """
    dim = int(partial_rotary_factor * x.shape[-1])
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    emb = torch.cat([torch.outer(positions.double(), inv_freq)] * 2, dim=-1)
    query_rot, query_pass = x[..., :dim], x[..., dim:]
    query_rot = (query_rot * emb.cos()) + (
        rotate_half_transcribed(query_rot) * emb.sin()
    )
    return torch.cat((query_rot, query_pass), dim=-1)


def gptj_partial_rope_transcribed(x_bshd, positions, rotary_dim):
    """A transcription of GPT-J's partial rotary in transformers (modeling_gptj.py).

    x in (batch, seq, heads, head_dim), as GPT-J rotates it; create_sinusoidal_positions
    (base 10000 over rotary_dim) gives sin and cos, each repeated twice in place
    (repeat_interleave) and multiplied with x and with rotate_every_two(x) =
    (-x[1::2], x[0::2]) interleaved, on the first rotary_dim features; k_pass after.
    """
    inv_freq = 1.0 / (
        10000 ** (torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim)
    )
    angles = torch.einsum("bi,j->bij", positions.double(), inv_freq)
    sin = torch.repeat_interleave(angles.sin()[:, :, None, :], 2, 3)
    cos = torch.repeat_interleave(angles.cos()[:, :, None, :], 2, 3)
    x_rot, x_pass = x_bshd[..., :rotary_dim], x_bshd[..., rotary_dim:]
    every_two = torch.stack((-x_rot[..., 1::2], x_rot[..., ::2]), dim=-1).flatten(-2)
    return torch.cat((x_rot * cos + every_two * sin, x_pass), dim=-1)


@pytest.mark.parametrize(
    "rotary_pct,head_dim,base",
    [(0.25, 64, 10000.0), (0.25, 80, 10000.0), (1.0, 32, 10000.0)],
)  # Pythia's rotary_pct 0.25 at head sizes 64 and 80; full rotation
def test_rotary_dim_matches_gpt_neox(rotary_pct, head_dim, base):
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(2, 4, 7, head_dim, dtype=torch.float64, generator=generator)
    positions = torch.tensor([0, 1, 2, 30, 500, 4095, 65535])
    rotary_dim = int(head_dim * rotary_pct)
    expected = gpt_neox_partial_rope_transcribed(x, positions, rotary_pct, base)
    for got in (
        apply_rope(x, positions, layout="half", base=base, rotary_dim=rotary_dim),
        RotaryEmbedding(head_dim, base, layout="half", rotary_dim=rotary_dim)(
            x, x, positions
        )[0],
        torch.from_numpy(
            apply_rope(
                x.numpy(), positions.numpy(), layout="half", rotary_dim=rotary_dim
            )
        ),
    ):
        # 1 / base**(2i/d) there, base**(-2i/d) here: a last-bit difference in theta_i
        # that position 65535 scales to about 1e-11
        torch.testing.assert_close(got, expected, atol=2e-11, rtol=0)
    assert torch.equal(got[..., rotary_dim:], x[..., rotary_dim:])  # passed through


def test_rotary_dim_matches_phi():
    # Phi-2: head_dim 80, partial_rotary_factor 0.4 -> 32 rotated features
    x = torch.randn(
        1, 2, 5, 80, dtype=torch.float64, generator=torch.Generator().manual_seed(4)
    )
    positions = torch.tensor([0, 9, 99, 999, 2047])
    expected = phi_partial_rope_transcribed(x, positions, 0.4, 10000.0)
    got = apply_rope(x, positions, layout="half", rotary_dim=32)
    torch.testing.assert_close(got, expected, atol=1e-12, rtol=0)
    numpy_got = apply_rope(x.numpy(), positions.numpy(), layout="half", rotary_dim=32)
    np.testing.assert_allclose(numpy_got, expected.numpy(), atol=1e-12, rtol=0)


def test_rotary_dim_matches_gptj():
    # GPT-J-6B: head_dim 256, rotary_dim 64, interleaved pairs, (batch, seq) position_ids
    generator = torch.Generator().manual_seed(5)
    x_bshd = torch.randn(2, 6, 3, 256, dtype=torch.float64, generator=generator)
    positions = torch.tensor([[0, 1, 2, 3, 4, 5], [10, 11, 12, 2000, 2001, 2047]])
    expected = gptj_partial_rope_transcribed(x_bshd, positions, 64)
    x = x_bshd.transpose(1, 2)  # (batch, heads, seq, dim), as posenc takes it
    got = apply_rope(x, positions, rotary_dim=64).transpose(1, 2)
    torch.testing.assert_close(got, expected, atol=1e-12, rtol=0)
    module = RotaryEmbedding(256, rotary_dim=64)
    torch.testing.assert_close(
        module.rotate(x, positions).transpose(1, 2), expected, atol=1e-12, rtol=0
    )
    numpy_got = apply_rope(x.numpy(), positions.numpy(), rotary_dim=64)
    np.testing.assert_allclose(
        numpy_got.transpose(0, 2, 1, 3), expected.numpy(), atol=1e-12, rtol=0
    )
    # the wrong layout on the rotated part differs far beyond rounding
    wrong = apply_rope(x, positions, rotary_dim=64, layout="half").transpose(1, 2)
    assert torch.max(torch.abs(wrong - expected)) > 0.1


def test_rotate_pairs_passes_the_tail_through_with_tables_of_rotary_dim():
    x = torch.randn(3, 10)
    angles = np.outer(range(3), rope_inv_freq(4))
    cos, sin = (torch.from_numpy(f(angles)).float() for f in (np.cos, np.sin))
    out = rotate_pairs(x, cos, sin, "half", rotary_dim=4)
    torch.testing.assert_close(
        out[:, :4], apply_rope(x[:, :4], range(3), layout="half")
    )
    assert torch.equal(out[:, 4:], x[:, 4:])


# ---------------------------------------------------------------- chapter 6's model uses it


def test_the_tiny_model_computes_the_tables_once_per_forward(monkeypatch):
    from posenc.experiments.tiny_model import ModelConfig, RopeSpec, TinyRopeTransformer

    torch.manual_seed(0)
    model = TinyRopeTransformer(ModelConfig(num_layers=3))
    calls, rotations = [], []
    tables, rotate = RotaryEmbedding.tables, RotaryEmbedding.rotate
    monkeypatch.setattr(
        RotaryEmbedding, "tables", lambda *a, **k: calls.append(k) or tables(*a, **k)
    )
    monkeypatch.setattr(
        RotaryEmbedding,
        "rotate",
        lambda self, x, *a, **k: (
            rotations.append(k["tables"]) or rotate(self, x, *a, **k)
        ),
    )
    tokens = torch.randint(0, 100, (2, 40))
    with torch.no_grad():
        model(tokens, RopeSpec("yarn", 4.0, original_max_position=16))
    assert len(calls) == 1 and calls[0]["seq"] == 40  # once, for 3 layers
    assert len(rotations) == 6 and all(t is rotations[0] for t in rotations)
