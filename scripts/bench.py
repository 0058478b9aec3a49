"""The performance benchmark (same as ``swe bench``): one JSON line per timed run.

    python scripts/bench.py --n 256 512 --precision both --repeat 3

Problem, keys and timing rules: see :mod:`swe.bench`.
"""

import argparse
import sys

from swe.bench import add_arguments, main_from_args

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    sys.exit(main_from_args(parser.parse_args()))
