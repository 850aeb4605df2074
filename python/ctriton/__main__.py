"""python -m ctriton COMMAND: run, dump, cache, info (see ctriton/cli.py)."""
import sys

from .cli import main

sys.exit(main())
