"""``make bench-writes``: what each write of a TrainingJob costs kube-apiserver, against a bare pod's.

    make bench-writes                       # or: PYTHONPATH=bench python -P bench/write_cost.py [--jobs 2000]
    make bench-writes BENCH_ARGS="--without-cel"   # the CRD's CEL rules left out, to see their share

What it measures and how: bench/kubetrain_bench/writes/__init__.py (and --help).
"""

import sys

from kubetrain_bench.writes import cli

if __name__ == "__main__":
    sys.exit(cli.main())
