"""``make bench-admission``: what kubetrain's validating webhook adds to a TrainingJob create.

    make bench-admission       # or: PYTHONPATH=bench python -P bench/admission_bench.py [--count 300]

The benchmark is bench/kubetrain_bench/admission.py.
"""

import sys

from kubetrain_bench import admission

if __name__ == "__main__":
    sys.exit(admission.main())
