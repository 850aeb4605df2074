"""``python -m ctriton.run SCRIPT [args]`` (or ``-m MODULE``, ``-c CODE``):
runs an unmodified Triton program with ``import triton`` resolved to
ctriton. See ``ctriton.compat``."""
import sys

from .compat import run_main

if __name__ == "__main__":
    sys.exit(run_main(sys.argv[1:]))
