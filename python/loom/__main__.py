"""python -m loom: the loom command line (same commands, flags and exit codes as the `loom` binary)."""
import sys

from . import _loom

if __name__ == "__main__":
    sys.exit(_loom.cli(sys.argv[1:]))
