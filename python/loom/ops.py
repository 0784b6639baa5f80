"""loom's operator library: one function per operator of `loom ops`, with its parameters in the same order.

Sizes are ints, or a loom.Var to leave that size symbolic (bound from the input shapes when a kernel runs; the
variable takes the parameter's name). Generated from `loom ops`; tests/test_loom.py checks they agree.
"""
from __future__ import annotations

from typing import Union

from . import _loom

Size = Union[int, _loom.Var]


def _make(name: str, params: dict) -> _loom.Operator:
    values, symbolic = {}, []
    for key, value in params.items():
        if isinstance(value, _loom.Var):
            symbolic.append(key)
        elif isinstance(value, bool):
            raise _loom.UserError(f"{name}: parameter {key}={value!r} is a bool, not a size")
        else:
            values[key] = str(value)
    return _loom.make_operator(name, values, symbolic)


def matmul(M: Size, N: Size, K: Size) -> _loom.Operator:
    """C[M,N] = A[M,K] B[K,N].

    M: rows (int (required))
    N: columns (int (required))
    K: reduction length (int (required))
    """
    return _make('matmul', dict(locals()))


def batch_matmul(B: Size, M: Size, N: Size, K: Size) -> _loom.Operator:
    """C[B,M,N] = A[B,M,K] B[B,K,N].

    B: batch (int (required))
    M: rows (int (required))
    N: columns (int (required))
    K: reduction length (int (required))
    """
    return _make('batch_matmul', dict(locals()))


def dense(M: Size, N: Size, K: Size, epilogue: str = 'none') -> _loom.Operator:
    """Y[M,N] = X[M,K] W[N,K]^T (+ bias, activation).

    M: rows (int (required))
    N: columns (int (required))
    K: reduction length (int (required))
    epilogue: fused epilogue (none|bias|bias_relu|bias_gelu [none])
    """
    return _make('dense', dict(locals()))


def conv2d(N: Size, H: Size, W: Size, CI: Size, CO: Size, KH: Size, KW: Size, stride: Size = 1, pad: Size = 0, dilation: Size = 1, groups: Size = 1, layout: str = 'NHWC', epilogue: str = 'none') -> _loom.Operator:
    """2-D convolution (weights HWIO for NHWC, OIHW for NCHW).

    N: batch (int (required))
    H: input height (int (required))
    W: input width (int (required))
    CI: input channels (int (required))
    CO: output channels (int (required))
    KH: kernel height (int (required))
    KW: kernel width (int (required))
    stride: stride (int [1])
    pad: zero padding on each side (int [0])
    dilation: dilation (int [1])
    groups: groups (divides CI and CO) (int [1])
    layout: activation layout (NHWC|NCHW [NHWC])
    epilogue: fused folded batch-norm (scale, shift) + relu (none|bn_relu [none])
    """
    return _make('conv2d', dict(locals()))


def depthwise_conv2d(N: Size, H: Size, W: Size, C: Size, KH: Size, KW: Size, stride: Size = 1, pad: Size = 0, layout: str = 'NHWC') -> _loom.Operator:
    """depthwise 2-D convolution (weights [KH,KW,C] / [C,KH,KW]).

    N: batch (int (required))
    H: input height (int (required))
    W: input width (int (required))
    C: channels (int (required))
    KH: kernel height (int (required))
    KW: kernel width (int (required))
    stride: stride (int [1])
    pad: zero padding on each side (int [0])
    layout: activation layout (NHWC|NCHW [NHWC])
    """
    return _make('depthwise_conv2d', dict(locals()))


def conv2d_transpose(N: Size, H: Size, W: Size, CI: Size, CO: Size, KH: Size, KW: Size, stride: Size = 1, pad: Size = 0) -> _loom.Operator:
    """transposed 2-D convolution, NHWC, weights [KH,KW,CI,CO].

    N: batch (int (required))
    H: input height (int (required))
    W: input width (int (required))
    CI: input channels (int (required))
    CO: output channels (int (required))
    KH: kernel height (int (required))
    KW: kernel width (int (required))
    stride: stride (int [1])
    pad: zero padding on each side (int [0])
    """
    return _make('conv2d_transpose', dict(locals()))


def pool2d(N: Size, H: Size, W: Size, C: Size, KH: Size, KW: Size, stride: Size = 1, pad: Size = 0, kind: str = 'max') -> _loom.Operator:
    """2-D pooling, NHWC.

    N: batch (int (required))
    H: input height (int (required))
    W: input width (int (required))
    C: channels (int (required))
    KH: kernel height (int (required))
    KW: kernel width (int (required))
    stride: stride (int [1])
    pad: zero padding on each side (int [0])
    kind: pooling function (max|avg [max])
    """
    return _make('pool2d', dict(locals()))


def softmax(M: Size, N: Size) -> _loom.Operator:
    """softmax over the last axis of X[M,N].

    M: rows (int (required))
    N: columns (int (required))
    """
    return _make('softmax', dict(locals()))


def layernorm(M: Size, N: Size) -> _loom.Operator:
    """layer normalisation over the last axis of X[M,N], eps 1e-5.

    M: rows (int (required))
    N: columns (int (required))
    """
    return _make('layernorm', dict(locals()))


def reduce(M: Size, N: Size, kind: str = 'sum') -> _loom.Operator:
    """Y[M] = reduction over the last axis of X[M,N].

    M: rows (int (required))
    N: columns (int (required))
    kind: reduction (sum|max|l2 [sum])
    """
    return _make('reduce', dict(locals()))


def gelu(M: Size, N: Size) -> _loom.Operator:
    """Y = GELU(X), X[M,N] (exact, erf form).

    M: rows (int (required))
    N: columns (int (required))
    """
    return _make('gelu', dict(locals()))


def bias_add_relu(M: Size, N: Size) -> _loom.Operator:
    """Y = relu(X[M,N] + bias[N]).

    M: rows (int (required))
    N: columns (int (required))
    """
    return _make('bias_add_relu', dict(locals()))


def bias_add_gelu(M: Size, N: Size) -> _loom.Operator:
    """Y = GELU(X[M,N] + bias[N]).

    M: rows (int (required))
    N: columns (int (required))
    """
    return _make('bias_add_gelu', dict(locals()))


def channel_affine_relu(N: Size, H: Size, W: Size, C: Size) -> _loom.Operator:
    """Y = relu(X[N,H,W,C] * scale[C] + shift[C]), NHWC.

    N: batch (int (required))
    H: height (int (required))
    W: width (int (required))
    C: channels (int (required))
    """
    return _make('channel_affine_relu', dict(locals()))
