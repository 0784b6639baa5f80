"""loom: a tensor compiler (construction with rapid search, JIT kernels for dynamic shapes).

    import numpy as np, loom
    op = loom.ops.dense(loom.Var("M"), 3072, 768, epilogue="bias_gelu")
    k = loom.compile(op, threads=1)
    y = k(x, w, b)                       # numpy arrays (or any __dlpack__ object), float32, C-contiguous

Errors: loom.UserError (a ValueError) for bad input, loom.InternalError (a RuntimeError) for loom's bugs.
"""
from __future__ import annotations

from . import _loom, ops, te
from ._loom import CompileReport, InternalError, JitKernel, Kernel, Operator, UserError, Var

__all__ = ["Var", "Operator", "Kernel", "JitKernel", "CompileReport", "UserError", "InternalError", "ops", "te",
           "compile", "jit", "tune", "random_inputs", "check", "list_operators"]


def compile(op: Operator, *, strategy: str = "construct", threads: int = 0, top_k: int = 1, hwspec: str = "host",
            seed: int = 1, records: str = "") -> Kernel:
    """Compiles `op` (the GIL is released meanwhile). `k(*inputs)` returns the output array (a tuple when
    there are several); `k(*inputs, out=[...])` writes into given arrays. `k.report` holds the times, the
    schedule and the loop IR; `k.llvm_ir` the optimized LLVM IR; `k.source` the generated kernel source (LLVM IR,
    or CUDA C for a GPU hwspec such as "h100", with `k.opencl_source` its OpenCL C twin); `k.executed_on` where the
    last call ran ("cpu", "cuda", "opencl-cpu")."""
    return _loom.compile(op, strategy, threads, top_k, hwspec, seed, records)


def jit(op: Operator, *, strategy: str = "construct", threads: int = 0, hwspec: str = "host", records: str = "",
        specialize_after: int = 1, max_specialized: int = 64, background: bool = True) -> JitKernel:
    """A dynamic-shape kernel on the process's runtime: any binding of the symbolic sizes, a shape-generic
    kernel at once, a specialized one built in the background and cached on disk ($LOOM_CACHE_DIR)."""
    return _loom.jit(op, strategy, threads, hwspec, records, specialize_after, max_specialized, background)


def tune(op: Operator, *, strategy: str = "hybrid", trials: int = 64, threads: int = 0, records: str = "",
         hwspec: str = "host", seed: int = 1):
    """Measures `trials` candidates and returns (kernel, report dict); records go to `records` (JSON lines)."""
    return _loom.tune(op, strategy, trials, threads, records, hwspec, seed)


def random_inputs(op: Operator, seed: int = 1, sizes: list[int] | None = None):
    """Uniform [-1, 1) float32 arrays for the inputs of `op`; `sizes` binds its symbolic sizes in order."""
    return _loom.random_inputs(op, seed, sizes or [])


def check(op: Operator, inputs, outputs) -> tuple[bool, float, int]:
    """Compares outputs with loom's reference executor: (ok, max relative error, points checked)."""
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    return tuple(_loom.check_against_reference(op, list(inputs), outputs))


def list_operators():
    """(name, summary, [(param, kind, default, choices, doc), ...]) for every library operator."""
    return _loom.list_operators()
