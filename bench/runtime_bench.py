"""``make bench``: the operator's caches and controller runtime against a real apiserver.

    make bench                                  # or: PYTHONPATH=bench python -P bench/runtime_bench.py
    make bench BENCH_ARGS="--objects 40000"     # see --help for the rest

What it measures and how: bench/kubetrain_bench/runtime/__init__.py.
"""

from kubetrain_bench.runtime import cli

if __name__ == "__main__":
    cli.main()
