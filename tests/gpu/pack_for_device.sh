#!/bin/bash
# Packs what tests/gpu/device_check.sh runs, from BUILD_DIR, into one
# compressed tarball for a GPU machine that lacks loom's build dependencies
# (LLVM, yaml-cpp, XGBoost...): the GPU test and benchmark programs, libloom,
# the CLI, and every shared library they load that is not the C or C++
# runtime, which the target machine has (of the same version or newer).
# There: unpack it, set LD_LIBRARY_PATH to its lib/ and LOOM_HWSPEC_DIR to
# the checkout's hwspecs/, then run device_check.sh on its folder.
# WITH_CPU_BENCH=1 adds loom_bench and its baselines (oneDNN, OpenBLAS), to
# measure construction on the machine's CPU as well, and loom_bench_model_rank
# and loom_bench_picks, whose records and step lists outlive the machine.
#
#   tests/gpu/pack_for_device.sh [BUILD_DIR=build] [OUT=loom-device.tar.xz]
set -eu
BUILD=${1:-build}
OUT=$(realpath -m "${2:-loom-device.tar.xz}")
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/tests" "$STAGE/benchmarks" "$STAGE/lib"
PROGRAMS=("$BUILD/tests/loom_gpu_tests" "$BUILD/benchmarks/loom_bench_gpu" "$BUILD/loom")
cp "$BUILD/tests/loom_gpu_tests" "$STAGE/tests/"
cp "$BUILD/benchmarks/loom_bench_gpu" "$STAGE/benchmarks/"
cp "$BUILD/loom" "$STAGE/"
if [ "${WITH_CPU_BENCH:-0}" = 1 ]; then
  for b in loom_bench loom_bench_model_rank loom_bench_picks; do
    PROGRAMS+=("$BUILD/benchmarks/$b")
    cp "$BUILD/benchmarks/$b" "$STAGE/benchmarks/"
  done
fi
cp -a "$BUILD"/libloom.so* "$STAGE/lib/"
ldd "${PROGRAMS[@]}" | awk '/=> \// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s)\.so' |
  while read -r lib; do cp -L "$lib" "$STAGE/lib/"; done
strip --strip-debug "$STAGE"/lib/* "$STAGE"/tests/* "$STAGE"/benchmarks/* "$STAGE/loom" 2>/dev/null || true
tar -cf - -C "$STAGE" . | xz -T0 -6 > "$OUT"
echo "wrote $OUT ($(du -h "$OUT" | cut -f1))"
