"""``make bench-checkpoint``: steps redone per stop with a checkpoint before it and without, and goodput.

    make bench-checkpoint                                  # or: PYTHONPATH=bench python -P bench/checkpoint_bench.py
    make bench-checkpoint BENCH_ARGS="--scenarios suspend --stops 5"   # see --help for the rest

On two real nodes. What it measures and how: bench/kubetrain_bench/checkpoint.py.
"""

from kubetrain_bench import checkpoint

if __name__ == "__main__":
    checkpoint.main()
