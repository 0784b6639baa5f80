"""Plots the tuning benchmark: best GFLOP/s against measurements and against seconds.

    python plot_tuning.py DIR

Reads DIR/bench_tune_curves.csv and DIR/bench_tune_final.csv (loom_bench_tune)
and, when present, DIR/tvm_curves.csv (tvm_metaschedule.py). One panel pair
per shape: left, best GFLOP/s so far against measurements (log scale);
right, against tuning seconds. oneDNN's GFLOP/s from the same run is a
dashed line; construct top-1 (no measurement) a dotted one. Writes
DIR/tuning_curves.png.
"""
import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def main():
    out = sys.argv[1]
    curves = read(os.path.join(out, "bench_tune_curves.csv")) + read(os.path.join(out, "tvm_curves.csv"))
    finals = read(os.path.join(out, "bench_tune_final.csv"))
    by_shape = defaultdict(lambda: defaultdict(list))
    labels = {}
    for r in curves:
        by_shape[r["shape"]][r["method"]].append((int(r["trials"]), float(r["seconds"]), float(r["best_gflops"])))
        labels[r["shape"]] = r["label"]
    lines = defaultdict(dict)
    for r in finals:
        lines[r["shape"]][r["method"]] = float(r["gflops"])
    shapes = list(by_shape)
    if not shapes:
        sys.exit(f"no curves in {out}")
    fig, axes = plt.subplots(len(shapes), 2, figsize=(12, 3.2 * len(shapes)), squeeze=False)
    colors = {"hybrid": "tab:red", "search": "tab:blue", "random": "tab:gray", "construct": "tab:green",
              "roller": "tab:olive"}
    for row, shape in enumerate(shapes):
        for method, pts in sorted(by_shape[shape].items()):
            pts.sort()
            color = colors.get(method, "tab:purple")
            style = "--" if method.startswith("tvm") else "-"
            for col, x in ((0, [p[0] for p in pts]), (1, [p[1] for p in pts])):
                axes[row][col].plot(x, [p[2] for p in pts], style, marker="o", ms=3, color=color, label=method)
        for col in (0, 1):
            ax = axes[row][col]
            if "oneDNN" in lines[shape]:
                ax.axhline(lines[shape]["oneDNN"], color="black", ls="--", lw=1, label="oneDNN")
            if "c-top1" in lines[shape]:
                ax.axhline(lines[shape]["c-top1"], color="tab:green", ls=":", lw=1, label="construct top-1")
            ax.set_ylabel("best GFLOP/s")
            ax.grid(alpha=0.3)
        axes[row][0].set_xscale("log", base=2)
        axes[row][0].set_xlabel("measurements")
        axes[row][1].set_xlabel("tuning seconds")
        axes[row][0].set_title(labels[shape], loc="left", fontsize=10)
        axes[row][1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path = os.path.join(out, "tuning_curves.png")
    fig.savefig(path, dpi=80)
    print(path)


if __name__ == "__main__":
    main()
