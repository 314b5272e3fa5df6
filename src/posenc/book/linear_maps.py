"""Matrices as linear maps: the primer of chapter 3 (note 003, sections 2 to 5).

Vectors are columns and a matrix acts on the left, ``y = M x``: an (m, n) matrix maps
R^n to R^m. A map f is linear when f(x + y) = f(x) + f(y) and f(c x) = c f(x); every
matrix map is, and every linear map of R^n is a matrix, the one whose column j is
f(e_j). The checks below measure how far a function is from that.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from posenc._validation import (
    as_float_array,
    as_float_scalar,
    as_float_vector,
    check_choice,
    check_index_list,
    check_positive_int,
)
from posenc.rope import (
    rotation_matrix as rotation_matrix,  # the one rotation formula, re-exported for the primer
)

VectorMap = Callable[[np.ndarray], np.ndarray]
SHEAR_AXES = ("x", "y")


def scaling_matrix(factors: Sequence[float]) -> np.ndarray:
    """diag(factors): stretches coordinate j by factors[j]; shape (n, n) for n factors."""
    return np.diag(as_float_vector(factors, "factors"))


def shear_matrix(amount: float, axis: str = "x") -> np.ndarray:
    """Shear of the plane: axis "x" gives [[1, k], [0, 1]] (e_2 -> (k, 1)), "y" gives [[1, 0], [k, 1]]."""
    k = as_float_scalar(amount, "amount")
    axis = check_choice(axis, "axis", SHEAR_AXES)
    return (
        np.array([[1.0, k], [0.0, 1.0]])
        if axis == "x"
        else np.array([[1.0, 0.0], [k, 1.0]])
    )


def lift_matrix(dim_in: int, dim_out: int) -> np.ndarray:
    """Shape (dim_out, dim_in), identity on top of zeros: (x_1..x_n) -> (x_1..x_n, 0..0), dim_out >= dim_in."""
    dim_in = check_positive_int(dim_in, "dim_in")
    dim_out = check_positive_int(dim_out, "dim_out")
    if dim_out < dim_in:
        raise ValueError(
            f"dim_out must be at least dim_in={dim_in} to lift, got {dim_out}"
        )
    return np.eye(dim_out, dim_in)


def projection_matrix(dim_in: int, keep: Iterable[int]) -> np.ndarray:
    """Shape (len(keep), dim_in): keeps the listed coordinates in that order and drops the rest."""
    dim_in = check_positive_int(dim_in, "dim_in")
    return np.eye(dim_in)[check_index_list(keep, dim_in, "keep")]


def mask_matrix(dim: int, keep: Iterable[int]) -> np.ndarray:
    """Shape (dim, dim), diagonal 1 on kept coordinates and 0 elsewhere: zeroes the others, keeps the size."""
    dim = check_positive_int(dim, "dim")
    diagonal = np.zeros(dim)
    diagonal[check_index_list(keep, dim, "keep")] = 1.0
    return np.diag(diagonal)


def apply_map(matrix: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """M x for one vector (n,) or (n, 1), or for k columns (n, k).

    M has shape (m, n). Unlike ``@`` on a 1-D right operand, this names the
    shapes when they cannot multiply.
    """
    matrix = as_float_array(matrix, "matrix")
    vectors = as_float_array(vectors, "vectors")
    if matrix.ndim != 2:
        raise ValueError(f"matrix must be 2-D, got shape {matrix.shape}")
    if vectors.ndim not in (1, 2):
        raise ValueError(
            "vectors must be one vector (n,) or columns (n, k), "
            f"got shape {vectors.shape}"
        )
    if vectors.shape[0] != matrix.shape[1]:
        rows, columns = matrix.shape
        raise ValueError(
            f"shapes cannot multiply: matrix is {rows}x{columns} and the "
            f"vectors have {vectors.shape[0]} rows; (a x b)(b x c) needs "
            "the inner sizes to agree"
        )
    return matrix @ vectors


def matrix_of(f: VectorMap, dim_in: int) -> np.ndarray:
    """The matrix whose column j is f(e_j), shape (dim_out, dim_in); equals f when f is linear."""
    dim_in = check_positive_int(dim_in, "dim_in")
    columns = [np.asarray(f(e), dtype=np.float64) for e in np.eye(dim_in)]
    if any(column.ndim != 1 or column.shape != columns[0].shape for column in columns):
        raise ValueError(
            "f must map a vector of shape (dim_in,) to a 1-D vector of one fixed size"
        )
    return np.stack(columns, axis=1)


def additivity_gap(f: VectorMap, x: np.ndarray, y: np.ndarray) -> float:
    """max |f(x + y) - f(x) - f(y)|: 0 for a linear map."""
    x, y = as_float_array(x, "x"), as_float_array(y, "y")
    if x.shape != y.shape:
        raise ValueError(
            f"x and y must have the same shape, got {x.shape} and {y.shape}"
        )
    return float(
        np.max(np.abs(np.asarray(f(x + y)) - np.asarray(f(x)) - np.asarray(f(y))))
    )


def homogeneity_gap(f: VectorMap, x: np.ndarray, scalar: float) -> float:
    """max |f(c x) - c f(x)|: 0 for a linear map."""
    x = as_float_array(x, "x")
    c = float(as_float_array(scalar, "scalar"))
    return float(np.max(np.abs(np.asarray(f(c * x)) - c * np.asarray(f(x)))))


def linearity_violation(
    f: VectorMap, dim_in: int, rng: np.random.Generator, trials: int = 100
) -> float:
    """Largest additivity or homogeneity gap of f over random inputs.

    Each of ``trials`` tries draws x, y (standard normal, shape (dim_in,))
    and a scalar. Rounding alone gives about 1e-15 times the size of f's
    values; a non-linear map gives far more.
    """
    dim_in = check_positive_int(dim_in, "dim_in")
    trials = check_positive_int(trials, "trials")
    worst = 0.0
    for _ in range(trials):
        x, y = rng.normal(size=dim_in), rng.normal(size=dim_in)
        scalar = float(rng.normal() * 3.0)
        gaps = additivity_gap(f, x, y), homogeneity_gap(f, x, scalar)
        worst = max(worst, *gaps)
    return worst


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """a . b / (|a| |b|), in [-1, 1]: 1 for the same direction. Zero vectors are a ValueError."""
    a, b = as_float_array(a, "a"), as_float_array(b, "b")
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(
            f"a and b must be 1-D vectors of the same length, got shapes {a.shape} and {b.shape}"
        )
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    if norms == 0.0:
        raise ValueError(
            "a and b must be non-zero vectors (a cosine needs a direction)"
        )
    return float(a @ b) / norms


class BasisGeometry(NamedTuple):
    """What a 2x2 matrix does to the unit square (:func:`basis_geometry`)."""

    length_i: float  # |M e_1|, the first side
    length_j: float  # |M e_2|, the second side
    angle: float  # angle between M e_1 and M e_2, in degrees
    area: float  # |det M|, the area of the image of the unit square


def basis_geometry(matrix: np.ndarray) -> BasisGeometry:
    """Side lengths, angle (degrees) and area of the image of the unit square.

    ``matrix``: shape (2, 2), acting on columns; its columns are M e_1 and
    M e_2, the images of the basis vectors i = (1, 0) and j = (0, 1). A
    rotation gives (1, 1, 90, 1): still a unit square. The shear
    [[1, 1], [0, 1]] gives (1, sqrt 2, 45, 1): a parallelogram.
    """
    matrix = as_float_array(matrix, "matrix")
    if matrix.shape != (2, 2):
        raise ValueError(f"matrix must have shape (2, 2), got shape {matrix.shape}")
    first, second = matrix[:, 0], matrix[:, 1]
    if not (np.any(first) and np.any(second)):
        raise ValueError(
            "matrix must have non-zero columns (an angle needs two directions)"
        )
    cross = float(first[0] * second[1] - first[1] * second[0])  # = det M
    # atan2(|sin|, cos) stays accurate near 0 and 180 degrees; acos does not
    angle = math.degrees(math.atan2(abs(cross), float(first @ second)))
    return BasisGeometry(
        length_i=float(np.linalg.norm(first)),
        length_j=float(np.linalg.norm(second)),
        angle=angle,
        area=abs(cross),
    )


def nearest_by_cosine(
    query: np.ndarray,
    vocabulary: Mapping[str, np.ndarray],
    *,
    exclude: Iterable[str] = (),
) -> list[tuple[str, float]]:
    """Every word of ``vocabulary`` except ``exclude``, ranked by cosine similarity to ``query``, best first.

    Ties keep the vocabulary's order. Returns a list of (word, cosine) pairs.
    """
    excluded = set(exclude)
    unknown = excluded - set(vocabulary)
    if unknown:
        raise ValueError(
            f"exclude names words not in the vocabulary: {sorted(unknown)}"
        )
    scores = [
        (word, cosine_similarity(query, vector))
        for word, vector in vocabulary.items()
        if word not in excluded
    ]
    if not scores:
        raise ValueError("vocabulary must keep at least one word after exclude")
    return sorted(scores, key=lambda pair: -pair[1])
