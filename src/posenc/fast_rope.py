"""The fast torch path behind :func:`posenc.rope.rotate_pairs`. Imports torch.

The reference formula (:func:`posenc.rotation.rotate_pairs_elementwise`) spends
most of its time on temporaries: four products, two sums and a stack or
concatenation, each a full pass over memory. The kernels here compute the
same rotations with fewer passes:

* ``"complex"``: interleaved pairs ``(x[2i], x[2i+1])`` are complex numbers
  in memory already, so ``torch.view_as_complex`` reads them without a copy
  and one complex multiplication by ``cos + j sin`` rotates every pair
  (RoFormer sec. 3.4.2): one pass, written straight into a fresh output.
* ``"complex-autograd"``: the same multiplication without ``out=``, so
  gradients flow.
* ``"half-out"``: for pairs ``(x[i], x[i + dim/2])`` one product
  ``x * [cos, cos]`` fills a fresh output, then ``b sin`` is subtracted from
  its first half and ``a sin`` added to its second, through one half-size
  temporary. ``out=`` and in-place writes into a new tensor do not record
  gradients, so this kernel runs only when no input needs one.
* ``"elementwise"``: anything else (float16/bfloat16, tensors whose memory
  cannot be viewed as complex, cos/sin of another dtype or device, tensor
  subclasses, torch.func transforms, forward-mode AD, autograd for the half
  layout, and tracing by ``torch.compile``, whose compiler fuses the formula
  itself) uses the reference formula
  (:func:`posenc.rotation.rotate_pairs_elementwise`), unchanged.

One private torch API is used: ``torch._C._functorch.is_functorch_wrapped_tensor``
tells tensors wrapped by torch.func transforms (vmap has no rule for ``out=``);
no public one exists. ``tests/test_fast_rope.py`` fails if it goes away or changes
its answer, and without it every tensor takes the reference formula, with a warning
at import.

Every kernel returns a new contiguous tensor of x's shape, dtype and device,
equal to the reference formula up to float rounding; ``"half-out"`` and the
fallback equal it bit for bit. :func:`choose_kernel` says which one runs.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
import torch.autograd.forward_ad as forward_ad

from posenc.rotation import rotate_pairs_elementwise

KERNELS = ("complex", "complex-autograd", "half-out", "elementwise")
FAST_DTYPES = (torch.float32, torch.float64)

# torch.func transforms (vmap, grad, jvp) wrap tensors; vmap has no rule for
# out= operators, so wrapped tensors take the reference formula.
_functorch = getattr(torch._C, "_functorch", None)
_is_functorch_wrapped = getattr(_functorch, "is_functorch_wrapped_tensor", None)
if _is_functorch_wrapped is None:
    warnings.warn(
        "torch._C._functorch.is_functorch_wrapped_tensor is gone from this torch: "
        "posenc.fast_rope uses the reference formula for every tensor (slower)",
        RuntimeWarning,
        stacklevel=1,
    )


def _plain(t: object) -> bool:
    """A plain tensor: no subclass, not wrapped by a torch.func transform."""
    if type(t) is not torch.Tensor:
        return False
    return _is_functorch_wrapped is not None and not _is_functorch_wrapped(t)


def _dual(*tensors: torch.Tensor) -> bool:
    """Whether any tensor carries a forward-mode AD tangent."""
    return any(forward_ad.unpack_dual(t).tangent is not None for t in tensors)


def _needs_autograd(*tensors: torch.Tensor) -> bool:
    """True when the output must carry gradients (backward or forward)."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return True
    return _dual(*tensors)


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether ``shape`` broadcasts to ``target`` without enlarging it."""
    if len(shape) > len(target):
        return False
    pairs = zip(reversed(shape), reversed(target))
    return all(size in (1, goal) for size, goal in pairs)


def _complex_viewable(x: torch.Tensor) -> bool:
    """Whether x.reshape(..., dim/2, 2) is a view view_as_complex accepts."""
    even = all(stride % 2 == 0 for stride in x.stride()[:-1])
    return x.stride(-1) == 1 and x.storage_offset() % 2 == 0 and even


def choose_kernel(x: torch.Tensor, cos: object, sin: object, layout: str) -> str:
    """Name of the kernel :func:`rotate` runs, one of :data:`KERNELS`.

    ``x``: (..., seq, dim); ``cos``, ``sin``: tensors that broadcast against
    (..., seq, dim/2). The fast kernels need float32 or float64 throughout,
    one device, plain tensors, cos/sin that do not enlarge x's shape, no
    torch.func transform and no torch.compile tracing.
    """
    if torch.compiler.is_compiling():
        return "elementwise"
    if not (_plain(x) and _plain(cos) and _plain(sin)):
        return "elementwise"
    if x.dtype not in FAST_DTYPES or x.numel() == 0:
        return "elementwise"
    for table in (cos, sin):
        if table.dtype != x.dtype or table.device != x.device:
            return "elementwise"
    half_shape = (*x.shape[:-1], x.shape[-1] // 2)
    if not (
        _broadcasts_to(cos.shape, half_shape) and _broadcasts_to(sin.shape, half_shape)
    ):
        return "elementwise"
    autograd = _needs_autograd(x, cos, sin)
    if layout == "interleaved":
        if not _complex_viewable(x) or _dual(x, cos, sin):
            return "elementwise"
        return "complex-autograd" if autograd else "complex"
    return "elementwise" if autograd else "half-out"


def _small_on_cpu(*tensors: torch.Tensor) -> bool:
    return all(t.device.type == "cpu" and not t.requires_grad for t in tensors)


def complex_rotors(cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """cos + j sin as one complex tensor of the broadcast shape.

    On the CPU numpy fills it: for a (seq, dim/2) table a multi-threaded
    torch operator can spend longer waking its worker threads on a busy
    machine than computing.
    """
    if _small_on_cpu(cos, sin):
        c, s = np.broadcast_arrays(cos.numpy(force=True), sin.numpy(force=True))
        rotors = np.empty(c.shape, dtype=np.result_type(c.dtype, np.complex64))
        rotors.real, rotors.imag = c, s
        return torch.from_numpy(rotors)
    return torch.complex(cos, sin)


def _doubled(cos: torch.Tensor) -> torch.Tensor:
    """[cos, cos] on the last axis (numpy on the CPU, as complex_rotors)."""
    if _small_on_cpu(cos):
        c = cos.numpy(force=True)
        return torch.from_numpy(np.concatenate((c, c), axis=-1))
    return torch.cat((cos, cos), dim=-1)


def complex_pairs(x: torch.Tensor) -> torch.Tensor:
    """The interleaved pairs (x[2i], x[2i+1]) of x as complex numbers, (..., seq, dim/2).

    A view, no copy: x's memory must allow it (:func:`_complex_viewable`).
    """
    return torch.view_as_complex(x.reshape(*x.shape[:-1], x.shape[-1] // 2, 2))


def rotate_by_rotors(x: torch.Tensor, rotors: torch.Tensor) -> torch.Tensor:
    """Interleaved RoPE as one complex product: each pair times its rotor cos + j sin.

    RoFormer sec. 3.4.2; the form of Meta's LLaMA reference code. ``x``:
    (..., seq, dim) float32/float64 whose pairs can be viewed as complex
    numbers (:func:`_complex_viewable`); ``rotors``: complex, broadcast against
    (..., seq, dim/2), of the matching precision. A differentiable
    expression; the product keeps x's memory order.
    """
    return torch.view_as_real(complex_pairs(x) * rotors).reshape(x.shape)


def rotate_interleaved_complex(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> torch.Tensor:
    """Interleaved RoPE: one complex product into a fresh contiguous tensor.

    ``x``: (..., seq, dim) float32/float64 whose pairs can be viewed as
    complex numbers; ``cos``, ``sin``: broadcast against (..., seq, dim/2),
    same dtype. No autograd. :func:`rotate_by_rotors` with ``out=``.
    """
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    torch.mul(complex_pairs(x), complex_rotors(cos, sin), out=complex_pairs(out))
    return out


def rotate_interleaved_complex_autograd(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> torch.Tensor:
    """The same complex product as a differentiable expression.

    Gradients reach x, cos and sin. The product keeps x's memory order;
    like the reference formula, the result is made contiguous.
    """
    return rotate_by_rotors(x, torch.complex(cos, sin)).contiguous()


def rotate_half_preallocated(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> torch.Tensor:
    """Half-layout RoPE in five passes into a fresh contiguous output.

    ``x``: (..., seq, dim) float32/float64, any strides; ``cos``, ``sin``:
    broadcast against (..., seq, dim/2). No autograd. With a = x[..., :h]
    and b = x[..., h:]: out = x * [cos, cos], then out[..., :h] -= b sin
    and out[..., h:] += a sin, each product rounded before it is added, as
    in the reference formula, so the result is the same bit for bit.
    (``addcmul_`` would save two passes, but it fuses multiply and add into
    one rounding and changes the last bit.)
    """
    h = x.shape[-1] // 2
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    torch.mul(x, _doubled(cos), out=out)
    product = x[..., h:] * sin
    out[..., :h].sub_(product)
    torch.mul(x[..., :h], sin, out=product)
    out[..., h:].add_(product)
    return out


def rotate(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str
) -> torch.Tensor:
    """Run the kernel :func:`choose_kernel` picks; the reference formula otherwise."""
    kernel = choose_kernel(x, cos, sin, layout)
    if kernel == "complex":
        return rotate_interleaved_complex(x, cos, sin)
    if kernel == "complex-autograd":
        return rotate_interleaved_complex_autograd(x, cos, sin)
    if kernel == "half-out":
        return rotate_half_preallocated(x, cos, sin)
    return rotate_pairs_elementwise(x, cos, sin, layout)
