"""``make bench-restarts``: from a rank's failure to every rank back in the rendezvous, on real nodes.

    make bench-restarts                                   # or: PYTHONPATH=bench python -P bench/restart_bench.py
    make bench-restarts BENCH_ARGS="--restarts 20"        # see --help for the rest

What it measures and how: bench/kubetrain_bench/restarts.py.
"""

from kubetrain_bench import restarts

if __name__ == "__main__":
    restarts.main()
