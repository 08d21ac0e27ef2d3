"""``make bench-faults``: real faults on real nodes while DDP and MPI jobs train; nothing lost.

    make bench-faults                                     # or: PYTHONPATH=bench python -P bench/faults_bench.py
    make bench-faults BENCH_ARGS="--seed 7 --faults 12"   # see --help for the rest

What it injects and checks, and how: bench/kubetrain_bench/faults/.
"""

from kubetrain_bench.faults import cli

if __name__ == "__main__":
    cli.main()
