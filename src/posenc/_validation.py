"""Argument checks shared by every module: each error names the argument and what was expected."""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Iterable

import numpy as np


def is_torch_tensor(value: object) -> bool:
    """Whether ``value`` is a ``torch.Tensor``, subclasses included (``nn.Parameter``, a user's own).

    Never imports torch: a tensor exists only once torch is imported, so
    without torch in ``sys.modules`` the answer is False.
    """
    tensor_type = getattr(sys.modules.get("torch"), "Tensor", None)
    return tensor_type is not None and isinstance(value, tensor_type)


def check_positive_int(value: object, name: str) -> int:
    """Return ``value`` as an int if it is a positive integer (bools rejected)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be a positive integer, got {value!r} of type {type(value).__name__}"
        )
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return int(value)


def check_even_positive_int(value: object, name: str) -> int:
    """Return ``value`` as an int if it is a positive even integer."""
    value = check_positive_int(value, name)
    if value % 2:
        raise ValueError(
            f"{name} must be even (dimensions come in (sin, cos) pairs), got {value}"
        )
    return value


def check_non_negative_int(value: object, name: str) -> int:
    """Return ``value`` as an int if it is an integer >= 0 (bools rejected)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be a non-negative integer, got {value!r} of type {type(value).__name__}"
        )
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value}")
    return int(value)


def check_choice(value: object, name: str, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of the option names ``choices``.

    Anything else, a string outside the list or an object of another type, is a
    ``ValueError`` that lists the choices: the argument picks one of a fixed set of
    names, and only those names are right values.
    """
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_positive_float(value: object, name: str) -> float:
    """Return ``value`` as a float if it is a finite real number > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a positive real number, got {value!r} of type {type(value).__name__}"
        )
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def as_float_array(value: object, name: str) -> np.ndarray:
    """Return ``value`` as a float64 numpy array of finite real numbers.

    Accepts numpy arrays and nested lists of real numbers. Booleans, complex numbers,
    strings and objects are a ``TypeError``; NaN or infinity is a ``ValueError``.
    """
    if is_torch_tensor(value):
        raise TypeError(
            f"{name} must be a numpy array, got a torch tensor; call .numpy() first"
        )
    array = np.asarray(value)
    if array.dtype == bool or not (
        np.issubdtype(array.dtype, np.integer)
        or np.issubdtype(array.dtype, np.floating)
    ):
        raise TypeError(f"{name} must hold real numbers, got dtype {array.dtype}")
    array = array.astype(np.float64, copy=False)
    if not np.all(np.isfinite(array)):
        raise ValueError(
            f"{name} must hold finite numbers only (found NaN or infinity)"
        )
    return array


def as_float_vector(value: object, name: str, shape: str = "(n,)") -> np.ndarray:
    """Return ``value`` as a non-empty 1-D float64 array (checked as :func:`as_float_array`).

    ``shape`` says in the message what the vector stands for, e.g. ``"(dim/2,)"``.
    Any other rank, or no entries, is a ``ValueError``.
    """
    array = as_float_array(value, name)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(
            f"{name} must be a non-empty 1-D array of shape {shape}, got shape {array.shape}"
        )
    return array


def as_float_scalar(value: object, name: str) -> float:
    """Return ``value`` as a float if it is one finite real number (a 0-d array counts)."""
    array = as_float_array(value, name)
    if array.ndim != 0:
        raise ValueError(f"{name} must be a single number, got shape {array.shape}")
    return float(array)


def check_index_list(indices: Iterable[object], size: int, name: str) -> list[int]:
    """Return ``indices`` as a list of distinct ints in 0 .. size - 1, at least one.

    Each entry must be an integer (bools rejected) inside the range; any other entry,
    an empty list or a repeated index is a ``ValueError`` naming the argument.
    """
    kept = list(indices)
    if not kept:
        raise ValueError(f"{name} must name at least one coordinate")
    for j in kept:
        if (
            isinstance(j, bool)
            or not isinstance(j, (int, np.integer))
            or not 0 <= j < size
        ):
            raise ValueError(
                f"{name} must hold coordinate indices 0 .. {size - 1}, got {j!r}"
            )
    if len(set(kept)) != len(kept):
        raise ValueError(f"{name} must not repeat a coordinate, got {kept}")
    return [int(j) for j in kept]


def check_int(value: object, name: str) -> int:
    """Return ``value`` as an int if it is an integer of any sign (bools and floats rejected)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be an integer, got {value!r} of type {type(value).__name__}"
        )
    return int(value)


def as_int_array(value: object, name: str) -> np.ndarray:
    """Return ``value`` as a 1-D int64 numpy array of integers (any sign).

    Accepts a list, tuple or range of ints, a numpy integer array or a torch integer
    tensor. Floats (even whole ones), booleans and other kinds are a ``TypeError``;
    any rank other than 1 is a ``ValueError``.
    """
    if is_torch_tensor(value):
        dtype = value.dtype
        if dtype.is_floating_point or dtype.is_complex or str(dtype) == "torch.bool":
            raise TypeError(f"{name} must hold integers, got a tensor of dtype {dtype}")
        value = value.detach().cpu().numpy()
    if isinstance(value, (str, bytes)):
        raise TypeError(
            f"{name} must be a 1-D sequence of integers, got {type(value).__name__}"
        )
    array = np.asarray(value)
    if array.size == 0 and not isinstance(value, np.ndarray):
        array = array.astype(np.int64)  # an empty list has no integer dtype of its own
    if array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{name} must hold integers, got dtype {array.dtype}")
    if array.ndim != 1:
        raise ValueError(
            f"{name} must be 1-D with shape (seq,), got shape {tuple(array.shape)}"
        )
    return array.astype(np.int64, copy=False)


def as_int_positions(value: object, name: str = "positions") -> np.ndarray:
    """Return ``value`` as int64 numpy positions of shape (seq,) or (batch, seq).

    The checks of :func:`as_int_array`, with one more rank allowed: one row of
    positions per batch entry (transformers' ``position_ids``).
    """
    if not is_torch_tensor(value) and not isinstance(value, (str, bytes)):
        array = np.asarray(value)
        if array.ndim == 2:
            if array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
                raise TypeError(f"{name} must hold integers, got dtype {array.dtype}")
            return array.astype(np.int64, copy=False)
    if is_torch_tensor(value) and value.ndim == 2:
        return np.stack([as_int_array(row, name) for row in value])
    return as_int_array(value, name)


def check_real(value: object, name: str) -> float:
    """Return ``value`` as a float if it is a finite real number of any sign (bools rejected)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a real number, got {value!r} of type {type(value).__name__}"
        )
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    return value


def check_bool(value: object, name: str) -> bool:
    """Return ``value`` as a bool if it is True or False (a Python or numpy bool; 0 and 1 rejected)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(
            f"{name} must be True or False, got {value!r} of type {type(value).__name__}"
        )
    return bool(value)


def check_factor(value: object, name: str = "factor") -> float:
    """Return ``value`` as a float if it is a finite context-extension factor >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a real number >= 1, got {value!r} of type {type(value).__name__}"
        )
    value = float(value)
    if not math.isfinite(value) or value < 1.0:
        raise ValueError(
            f"{name} must be a finite number >= 1 (the context is extended, not shrunk), got {value}"
        )
    return value


def check_options(given: Iterable[str], taken: Iterable[str], owner: str) -> None:
    """Raise a ValueError naming every option in ``given`` that ``owner`` does not take.

    ``owner`` says who takes them (for example ``"method 'linear'"``); the message lists the
    unknown options, sorted, and the ones that are taken ("no options" when there are none).
    """
    taken = sorted(taken)
    unknown = sorted(set(given) - set(taken))
    if unknown:
        raise ValueError(
            f"{owner} does not take the option(s) {unknown}; it takes {taken or 'no options'}"
        )
