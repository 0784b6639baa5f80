#!/usr/bin/env bash
# The Python tier: `pip install .` from the repository root into a fresh
# virtual environment (build/venv), then the package's pytest suite, run
# from outside the source tree so that the installed package is tested.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf build/venv
python3 -m venv build/venv
build/venv/bin/pip install -q --upgrade pip
build/venv/bin/pip install -q . pytest
cd "$(mktemp -d)"
"$OLDPWD/build/venv/bin/python" -m pytest -q "$OLDPWD/python/tests"
