"""``make bench-jobs``: N TrainingJobs from create to Running, against a plain-client lower bound.

    make bench-jobs       # or: PYTHONPATH=bench python -P bench/jobs_bench.py [--jobs 500 --replicas 4]
    make bench-jobs BENCH_ARGS="--jobs 10000 --steady 60"           # see --help for the rest
    make bench-jobs BENCH_ARGS=--smoke                               # every phase, small (make test)

What it runs and measures, phase by phase: bench/kubetrain_bench/jobs/__init__.py.
"""

import sys

from kubetrain_bench.jobs import cli

if __name__ == "__main__":
    sys.exit(cli.main())
