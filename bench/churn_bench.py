"""``make bench-churn``: jobs made and deleted for up to an hour on kwok; the operator's RSS and its per-job maps.

    make bench-churn                                           # 100,000 jobs or an hour, whichever first
    make bench-churn BENCH_ARGS="--minutes 20 --rate 20"       # see --help for the rest

What it measures and how: bench/kubetrain_bench/churn.py.
"""

import sys

from kubetrain_bench import churn

if __name__ == "__main__":
    sys.exit(churn.main())
