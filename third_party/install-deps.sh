#!/usr/bin/env bash
# Installs every Debian package loom needs to build, test and benchmark
# (clang-16 and its runtime libraries: the sanitizer tier and libFuzzer;
# Python 3 with venv and headers: the Python package, whose own build
# dependencies, nanobind and scikit-build-core, pip fetches from PyPI; PoCL
# with the OpenCL ICD loader and headers: GPU kernels' OpenCL twin runs on
# the CPU in the gpu_check tier). The CUDA Toolkit (NVRTC) is optional: the
# GPU backend opens it at run time, and the NVRTC checks run where it is.
# Idempotent and non-interactive: packages already present are skipped.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  llvm-16-dev libzstd-dev zlib1g-dev libedit-dev libxml2-dev libffi-dev
  libyaml-cpp-dev libeigen3-dev libboost-graph-dev libgtest-dev
  nlohmann-json3-dev libxgboost-dev
  libdnnl-dev libopenblas-dev
  clang-16 libclang-rt-16-dev
  python3 python3-dev python3-venv python3-pip
  pocl-opencl-icd ocl-icd-opencl-dev opencl-c-headers
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
