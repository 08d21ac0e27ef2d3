"""kubetrain's benchmarks, as modules by role; ``bench/*.py`` are their entry points.

Not an installed package: ``bench/`` is put on the path by the Makefile's bench targets
(``PYTHONPATH=bench``), by pytest (``pythonpath``) and by mypy (``mypy_path``), and the
repository root never is (its ``operator/`` folder would shadow the standard library's).

One subpackage per benchmark — ``jobs`` (``make bench-jobs``), ``writes`` (``make
bench-writes``), ``runtime`` (``make bench``), ``hostile`` (``make bench-hostile``: the
hostile-input generator and runner, which the e2e tests use too), ``files`` (``make
bench-files``: hostile files through the CLI, the client and the converter, no cluster; the unit
tests run its generator and doors too) and ``admission`` (``make bench-admission``) — each with
its ``cli`` (arguments and ``main``). What more than one uses:
``procs`` (readings of /proc), ``stats`` (percentiles), ``watch`` (list, then watch),
``operator_process`` (kubetrain-operator started and ready), ``deployment`` (``config/default``
on a cluster of its own), ``samples`` (the repository's samples), ``scripts`` (an entry point
run as ``make`` runs it) and ``console`` (progress lines).
"""

from __future__ import annotations

import pathlib
import warnings

BENCH = pathlib.Path(__file__).resolve().parent.parent
ROOT = BENCH.parent

# kr8s 0.20 knows Kubernetes up to 1.35; the local control plane runs 1.36.
warnings.filterwarnings("ignore", message="Kubernetes version .* is not supported")
