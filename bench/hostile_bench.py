"""``make bench-hostile``: 10,000 generated documents (jobs, short jobs, runtimes) through the real apiserver and kubetrain's webhooks.

    make bench-hostile        # or: PYTHONPATH=bench python -P bench/hostile_bench.py [--count 10000 --seed 12]
    make bench-hostile BENCH_ARGS="--count 2000 --json out.json"     # see --help for the rest
    make bench-hostile BENCH_ARGS="--mix short=0.6,runtime=0.4"     # short jobs and runtimes only

The benchmark is bench/kubetrain_bench/hostile/cli.py; the generator and the runner it uses are
the same the e2e tests use (bench/kubetrain_bench/hostile/).
"""

import sys

from kubetrain_bench.hostile import cli

if __name__ == "__main__":
    sys.exit(cli.main())
