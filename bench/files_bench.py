"""``make bench-files``: 10,000 generated hostile files through the CLI, the client and the converter.

    make bench-files          # or: PYTHONPATH=bench python -P bench/files_bench.py [--count 10000 --seed 27]
    make bench-files BENCH_ARGS="--count 2000 --json out.json"     # see --help for the rest

No cluster is needed. The benchmark is bench/kubetrain_bench/files/cli.py; the generator and
the doors it uses are the ones tests/unit/test_hostile_files.py runs a few hundred of.
"""

import sys

from kubetrain_bench.files import cli

if __name__ == "__main__":
    sys.exit(cli.main())
