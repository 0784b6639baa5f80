"""TVM MetaSchedule on the tuning benchmark's shapes, as a live peer.

    python tvm_metaschedule.py --out DIR [--shapes gemm1024,conv56,...] [--trials 64]
                               [--long-trials 512] [--long-shapes gemm1024,conv56]

One thread (TVM_NUM_THREADS=1; run it under `taskset -c N`), target
`llvm -mcpu=<host> -num-cores=1`. For each shape it tunes with
`ms.tune_tir` (evolutionary search, XGBoost cost model, 64 trials per
iteration), records after every measured batch the best GFLOP/s so far, the
trials spent and the seconds since tuning started, then compiles the best
schedule and times it with `time_evaluator`. Writes DIR/tvm_curves.csv
(shape,label,method,trials,seconds,best_gflops) and DIR/tvm_final.csv.
The shapes mirror loom_bench_tune's (same names, NHWC convolutions with
HWIO weights, dense with weights [N, K]).
"""
import argparse
import csv
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import tvm
from tvm import te
from tvm.s_tir import meta_schedule as ms
from tvm.ir.utils import derived_object


def gemm(M, N, K, dense):
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((N, K) if dense else (K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    if dense:
        C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    else:
        C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return [A, B, C], 2.0 * M * N * K


def conv(H, CI, CO, KS, stride, depthwise):
    pad = KS // 2
    OH = (H + 2 * pad - KS) // stride + 1
    X = te.placeholder((1, H, H, CI), name="X")
    W = te.placeholder((KS, KS, CI) if depthwise else (KS, KS, CI, CO), name="W")
    P = te.compute(
        (1, H + 2 * pad, H + 2 * pad, CI),
        lambda n, h, w, c: tvm.tirx.if_then_else(
            tvm.tirx.all(h >= pad, h < H + pad, w >= pad, w < H + pad), X[n, h - pad, w - pad, c], 0.0),
        name="P")
    rh = te.reduce_axis((0, KS), name="rh")
    rw = te.reduce_axis((0, KS), name="rw")
    if depthwise:
        Y = te.compute((1, OH, OH, CI), lambda n, h, w, c: te.sum(
            P[n, h * stride + rh, w * stride + rw, c] * W[rh, rw, c], axis=[rh, rw]), name="Y")
        flops = 2.0 * OH * OH * CI * KS * KS
    else:
        rc = te.reduce_axis((0, CI), name="rc")
        Y = te.compute((1, OH, OH, CO), lambda n, h, w, f: te.sum(
            P[n, h * stride + rh, w * stride + rw, rc] * W[rh, rw, rc, f], axis=[rh, rw, rc]), name="Y")
        flops = 2.0 * OH * OH * CO * CI * KS * KS
    return [X, W, Y], flops


SHAPES = {
    "gemm1024": ("matmul 1024x1024x1024", lambda: gemm(1024, 1024, 1024, False)),
    "gemm512": ("matmul 512x512x512", lambda: gemm(512, 512, 512, False)),
    "bert2048": ("dense 2048x3072x768", lambda: gemm(2048, 3072, 768, True)),
    "bert80": ("dense 80x3072x768", lambda: gemm(80, 3072, 768, True)),
    "conv56": ("conv 56x56 64->64 3x3/1", lambda: conv(56, 64, 64, 3, 1, False)),
    "conv14": ("conv 14x14 256->256 3x3/1", lambda: conv(14, 256, 256, 3, 1, False)),
    "conv7": ("conv 7x7 512->512 3x3/1", lambda: conv(7, 512, 512, 3, 1, False)),
    "conv224": ("conv 224x224 3->64 7x7/2", lambda: conv(224, 3, 64, 7, 2, False)),
    "dep112": ("depthwise 112x112x32 3x3/1", lambda: conv(112, 32, 32, 3, 1, True)),
    "dep14": ("depthwise 14x14x512 3x3/2", lambda: conv(14, 512, 512, 3, 2, True)),
}


def make_progress_callback(flops, start, points):
    @derived_object
    class Progress(ms.measure_callback.PyMeasureCallback):
        def __init__(self):
            self.best = 0.0
            self.trials = 0

        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
            for r in runner_results:
                self.trials += 1
                if r.run_secs:
                    secs = float(np.median([float(s) for s in r.run_secs]))
                    if secs > 0:
                        self.best = max(self.best, flops / secs / 1e9)
            points.append((self.trials, time.time() - start, self.best))

    return Progress()


def tune_shape(name, trials, target, out_rows, final_rows, method):
    label, build = SHAPES[name]
    tensors, flops = build()
    mod = tvm.IRModule({"main": te.create_prim_func(tensors)})
    work_dir = tempfile.mkdtemp(prefix=f"tvm_{name}_")
    points = []
    start = time.time()
    callbacks = ms.measure_callback.MeasureCallback.create("default") + [make_progress_callback(flops, start, points)]
    db = ms.tune_tir(mod, target, work_dir, max_trials_global=trials, num_trials_per_iter=64,
                     num_tuning_cores=1, measure_callbacks=callbacks, seed=1)
    tune_s = time.time() - start
    for trials_done, seconds, best in points:
        out_rows.writerow([name, label, method, trials_done, f"{seconds:.3f}", f"{best:.4f}"])
    sch = ms.tir_integration.compile_tir(db, mod, target)
    lib = tvm.compile(sch.mod, target=target) if sch is not None else None
    gflops = 0.0
    if lib is not None:
        dev = tvm.cpu(0)
        args = [tvm.runtime.tensor(np.random.uniform(-1, 1, [int(d) for d in t.shape]).astype("float32"), dev)
                for t in tensors]
        ev = lib.jit().time_evaluator("main", dev, number=3, repeat=15, min_repeat_ms=20)
        gflops = flops / float(np.median(ev(*args).results)) / 1e9
    final_rows.writerow([name, label, method, f"{gflops:.4f}", f"{tune_s:.1f}"])
    print(f"{method} {name}: best {gflops:.1f} GFLOP/s after {trials} trials in {tune_s:.0f} s", flush=True)
    shutil.rmtree(work_dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--long-trials", type=int, default=512)
    ap.add_argument("--long-shapes", default="gemm1024,conv56")
    a = ap.parse_args()
    if os.environ.get("TVM_NUM_THREADS") != "1":
        sys.exit("set TVM_NUM_THREADS=1 (and pin with taskset): the comparison is on one thread")
    cpu = tvm.target.codegen.llvm_get_system_cpu()
    target = tvm.target.Target({"kind": "llvm", "mcpu": cpu, "num-cores": 1})
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "tvm_curves.csv"), "w", newline="") as cf, \
         open(os.path.join(a.out, "tvm_final.csv"), "w", newline="") as ff:
        curves, finals = csv.writer(cf), csv.writer(ff)
        curves.writerow(["shape", "label", "method", "trials", "seconds", "best_gflops"])
        finals.writerow(["shape", "label", "method", "gflops", "tune_s"])
        for name in a.shapes.split(","):
            runs = [a.trials] + ([a.long_trials] if name in a.long_shapes.split(",") else [])
            for trials in runs:
                tune_shape(name, trials, target, curves, finals, f"tvm-ms@{trials}")
                cf.flush()
                ff.flush()


if __name__ == "__main__":
    main()
