"""The write-cost benchmark runs to its end on a small load, in ``make test``.

``bench/write_cost.py --jobs 10``: etcd and kube-apiserver of its own, every write a job costs
measured one kind at a time. The test asserts that every kind was measured and that the per-job
sums are made of them, and prints the report; it asserts no cost — ten writes of a kind say little,
and the full runs (``make bench-writes``) are for measuring.
"""

from __future__ import annotations

import json

import pytest

from kubetrain_bench import scripts
from kubetrain_bench.writes.report import per_job

KINDS = {
    "TrainingJob create",
    "TrainingJob status: Created",
    "TrainingJob status: Running",
    "Service create",
    *(
        f"{pod}: {write}"
        for pod in ("bare pod", "operator's pod")
        for write in ("create", "binding", "status Running")
    ),
}


def test_the_write_cost_benchmark_measures_every_write_a_job_costs() -> None:
    run = scripts.run("write_cost", "--jobs", "10", "--json", timeout=300)
    assert run.returncode == 0, run.stderr[-4000:]
    figures = json.loads(run.stdout)
    ms, job = figures["ms_per_write"], figures["per_job_ms"]
    print(json.dumps(figures, indent=2))
    assert set(ms) == KINDS
    assert all(v >= 0 for v in ms.values()), ms
    assert job == pytest.approx(per_job(ms, replicas=4, services=1))
