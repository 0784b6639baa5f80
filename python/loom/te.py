"""The tensor-expression DSL, in the style of TVM's te.

    M = loom.Var("M")
    X = te.placeholder((M, 64), name="X")
    k = te.reduce_axis(64, name="k")
    Y = te.compute((M,), lambda i: te.sum(X[i, k] * X[i, k], axis=k), name="Y")
    op = te.operator([X], [Y], name="row_sq")

Index variables, reduce axes and expressions of them index tensors (`X[i, k]`); Python numbers mix in. Reads
are bounds-checked when the operator is built: guard edge reads with te.if_then_else(cond, X[...], 0.0).
"""
from __future__ import annotations

from typing import Callable, Sequence

from . import _loom
from ._loom import Expr, IterVar, Tensor, Var, abs, erf, exp, if_then_else, log, maximum, minimum, rsqrt, sqrt, tanh

__all__ = ["Expr", "IterVar", "Tensor", "Var", "placeholder", "reduce_axis", "compute", "sum", "max", "min",
           "operator", "exp", "log", "tanh", "erf", "sqrt", "rsqrt", "abs", "maximum", "minimum", "if_then_else"]


def placeholder(shape: Sequence, name: str = "placeholder", dtype: str = "float32") -> Tensor:
    """An input tensor of `shape` (ints and loom.Var sizes)."""
    if dtype != "float32":
        raise _loom.UserError(f"placeholder '{name}': dtype {dtype!r} is not supported; use 'float32'")
    return _loom.placeholder(list(shape), name)


def reduce_axis(extent, name: str = "k") -> IterVar:
    """A reduction axis over [0, extent)."""
    return _loom.reduce_axis(extent, name)


def compute(shape: Sequence, fcompute: Callable[..., object], name: str = "compute") -> Tensor:
    """A tensor whose element (i0, i1, ...) is fcompute(i0, i1, ...). Exceptions raised by fcompute propagate."""
    return _loom.compute(list(shape), fcompute, name)


def sum(expr, axis) -> Expr:  # noqa: A001 - TVM's name
    """The sum of `expr` over the reduce axis (or list of axes) `axis`."""
    return _loom.sum(expr, axis)


def max(expr, axis) -> Expr:  # noqa: A001
    """The maximum of `expr` over `axis`."""
    return _loom.reduce_max(expr, axis)


def min(expr, axis) -> Expr:  # noqa: A001
    """The minimum of `expr` over `axis`."""
    return _loom.reduce_min(expr, axis)


def operator(inputs: Sequence[Tensor], outputs: Sequence[Tensor], name: str = "custom") -> _loom.Operator:
    """An operator from tensors: its symbolic sizes and flop count are derived, and mistakes (an unbound size,
    a read that may leave its tensor, no outputs, a tensor read but not an input) raise loom.UserError."""
    return _loom.build_operator(name, list(inputs), list(outputs))
