"""The Python API against numpy: library and custom operators, numpy and DLPack inputs, out=, the
dynamic-shape runtime, errors, and python -m loom."""
import inspect
import subprocess
import sys

import numpy as np
import pytest

import loom
from loom import te


def test_dense_with_a_symbolic_size_matches_numpy():
    op = loom.ops.dense(loom.Var("M"), 48, 40, epilogue="bias_relu")
    k = loom.compile(op, threads=1)
    rng = np.random.default_rng(0)
    for m in (1, 7, 33):
        x = rng.standard_normal((m, 40), dtype=np.float32)
        w = rng.standard_normal((48, 40), dtype=np.float32)
        b = rng.standard_normal(48, dtype=np.float32)
        y = k(x, w, b)
        assert y.shape == (m, 48) and y.dtype == np.float32
        np.testing.assert_allclose(y, np.maximum(x @ w.T + b, 0), rtol=1e-4, atol=1e-4)
    assert k.report.schedule and k.report.codegen_ms > 0
    assert "define" in k.llvm_ir
    assert k.source == k.llvm_ir


def test_gpu_hwspec_compiles_cuda_c_and_its_opencl_twin():
    op = loom.ops.matmul(M=37, N=45, K=29)
    k = loom.compile(op, hwspec="h100")
    assert '__global__' in k.source and "__kernel" in k.opencl_source
    assert k.executed_on == ""  # not run yet


def test_custom_operator_from_a_python_lambda():
    M = loom.Var("M")
    X = te.placeholder((M, 16), name="X")
    k = te.reduce_axis(16, name="k")
    S = te.compute((M,), lambda i: te.sum(X[i, k] * X[i, k], axis=k), name="S")
    Y = te.compute((M, 16), lambda i, j: X[i, j] * te.rsqrt(S[i] + 1e-5), name="Y")
    op = te.operator([X], [Y], name="row_normalize")
    assert op.size_vars == ["M"]
    x = np.random.default_rng(1).standard_normal((13, 16), dtype=np.float32)
    y = loom.compile(op, threads=1)(x)
    np.testing.assert_allclose(y, x / np.sqrt((x * x).sum(1, keepdims=True) + 1e-5), rtol=1e-4, atol=1e-5)


def test_out_and_several_outputs_and_dlpack_inputs():
    op = loom.ops.matmul(5, 6, 7)
    k = loom.compile(op, threads=1)
    a = np.random.default_rng(2).standard_normal((5, 7), dtype=np.float32)
    b = np.random.default_rng(3).standard_normal((7, 6), dtype=np.float32)

    class DLPackOnly:  # an array from another framework: only the DLPack protocol
        def __init__(self, array):
            self._array = array

        def __dlpack__(self, *args, **kwargs):
            return self._array.__dlpack__(*args, **kwargs)

        def __dlpack_device__(self):
            return self._array.__dlpack_device__()

    out = np.zeros((5, 6), dtype=np.float32)
    assert k(DLPackOnly(a), DLPackOnly(b), out=[out]) is None
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)
    ok, err, points = loom.check(op, [a, b], [out])
    assert ok and points == 30


def test_dynamic_shapes_through_jit():
    op = loom.ops.softmax(loom.Var("M"), 19)
    k = loom.jit(op, threads=1)
    for m in (3, 40, 3):
        x = np.random.default_rng(m).standard_normal((m, 19), dtype=np.float32)
        e = np.exp(x - x.max(1, keepdims=True))
        np.testing.assert_allclose(k(x), e / e.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)
    k.wait_idle()
    y = np.zeros((3, 19), dtype=np.float32)
    assert k.run([np.ones((3, 19), dtype=np.float32)], [y]) in ("specialized", "disk")
    stats = k.stats()
    assert stats["calls"] == 4 and stats["compiles_on_critical_path"] <= 1


def test_errors_are_user_errors_naming_the_mistake():
    assert issubclass(loom.UserError, ValueError)
    k = loom.compile(loom.ops.matmul(4, 4, 4), threads=1)
    with pytest.raises(loom.UserError, match="input #0"):
        k(np.zeros((4, 5), dtype=np.float32), np.zeros((4, 4), dtype=np.float32))
    with pytest.raises(loom.UserError, match="float32"):
        k(np.zeros((4, 4)), np.zeros((4, 4), dtype=np.float32))
    with pytest.raises(loom.UserError, match="C-contiguous"):
        k(np.zeros((4, 8), dtype=np.float32)[:, ::2], np.zeros((4, 4), dtype=np.float32))
    with pytest.raises(loom.UserError, match="unknown parameter|cannot be symbolic"):
        loom.ops.conv2d(1, loom.Var("H"), 8, 2, 2, 3, 3)
    X = te.placeholder((8,), name="X")
    shifted = te.compute((8,), lambda i: X[i + 1], name="Shift")
    with pytest.raises(loom.UserError, match="may read 'X' out of bounds"):
        te.operator([X], [shifted])
    with pytest.raises(loom.UserError, match="has no outputs"):
        te.operator([X], [])
    L = loom.Var("L")
    with pytest.raises(loom.UserError, match="size 'L'"):
        te.operator([X], [te.compute((L,), lambda i: X[0], name="U")])


def test_python_exceptions_in_compute_propagate():
    X = te.placeholder((4,), name="X")

    def body(i):
        raise KeyError("from the lambda")

    with pytest.raises(KeyError, match="from the lambda"):
        te.compute((4,), body, name="Boom")


def test_ops_functions_follow_the_operator_library():
    names = [name for name, _, _ in loom.list_operators()]
    for name, _, params in loom.list_operators():
        fn = getattr(loom.ops, name)
        sig = inspect.signature(fn)
        assert list(sig.parameters) == [p[0] for p in params], name
        for p in params:
            default = sig.parameters[p[0]].default
            if p[2] == "":
                assert default is inspect.Parameter.empty, (name, p[0])
            else:
                assert str(default) == p[2], (name, p[0])
    assert len(names) == len([n for n in dir(loom.ops) if n in names])


def test_python_dash_m_loom_mirrors_the_cli():
    r = subprocess.run([sys.executable, "-m", "loom", "run", "matmul", "M=5", "N=3", "K=4", "--threads=1", "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and '"ok":true' in r.stdout
    r = subprocess.run([sys.executable, "-m", "loom", "run", "matmull", "M=1"], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown operator 'matmull'" in r.stderr


def test_call_overhead_on_a_cached_tiny_kernel(capsys):
    k = loom.compile(loom.ops.matmul(4, 4, 4), threads=1)
    a = np.ones((4, 4), dtype=np.float32)
    out = [np.zeros((4, 4), dtype=np.float32)]
    import time
    best = float("inf")
    for _ in range(20):
        t = time.perf_counter()
        for _ in range(1000):
            k(a, a, out=out)
        best = min(best, (time.perf_counter() - t) / 1000)
    with capsys.disabled():
        print(f"\n  python call of a cached 4x4 matmul: {best * 1e6:.2f} us per call (best of 20 x 1000)")
    assert best > 0
