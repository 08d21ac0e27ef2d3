"""``make bench-ha``: two operator replicas under 2,000 jobs on kwok, the leader SIGKILLed.

    make bench-ha       # or: PYTHONPATH=bench python -P bench/ha_bench.py [--jobs 2000 --lease 15/10/2]
    make bench-ha BENCH_ARGS="--lease 15/10/2 --lease 8/5/1"        # see --help for the rest

What it runs and measures: bench/kubetrain_bench/ha/__init__.py.
"""

import sys

from kubetrain_bench.ha import cli

if __name__ == "__main__":
    sys.exit(cli.main())
