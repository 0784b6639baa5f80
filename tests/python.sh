#!/usr/bin/env bash
# The Python tier: `pip install .` from the repository root into a fresh
# virtual environment (build/venv), the static libloom that build leaves in
# build/python used from an outside project, then the package's pytest
# suite, run from outside the source tree so that the installed package is
# tested.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf build/venv
python3 -m venv build/venv
build/venv/bin/pip install -q --upgrade pip
build/venv/bin/pip install -q . pytest
# The wheel's build is a static libloom: install it too and use it from an outside project.
tests/package/outside_project.sh build/python static
root=$PWD
cd "$(mktemp -d)"
"$root/build/venv/bin/python" -m pytest -q "$root/python/tests"
