"""The jobs benchmark's short mode runs every phase to its end, in ``make test``.

``bench/jobs_bench.py --smoke``: a plain client (bare pods; pods with a Service each; every write
the jobs cost, with no operator), the operator with 12 jobs, 12 more arriving while those finish,
and a steady state with two single changes, on a cluster of its own. The test asserts that the
run completes and that every figure is there, and prints them; it asserts no timing — this
machine's load moves those, and the full runs are for measuring.
The one number it holds the operator to is a count: writes per job on the normal course.
"""

from __future__ import annotations

import json
from typing import Any

from kubetrain_bench import scripts
from kubetrain_bench.jobs import report

JOBS, REPLICAS = 12, 2  # what --smoke runs
SERVICES = 1  # per job: PerJob, what a new v1beta1 job is given and what the benchmark runs unless told


def test_the_jobs_benchmark_short_mode_runs_every_phase() -> None:
    run = scripts.run("jobs_bench", "--smoke", "--json", timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    figures = json.loads(run.stdout)
    print(_report(figures))
    assert figures["error"] is None
    assert figures["plain"]["count"] == JOBS * REPLICAS
    assert figures["plain"]["latency"]["count"] == JOBS * REPLICAS
    assert figures["plain_services"]["latency"]["count"] == JOBS * REPLICAS
    # The floor of any operator: every write a job costs, made by the benchmark with none running.
    assert figures["plain_writes"]["latency"]["count"] == JOBS * REPLICAS
    job_writes = {"POST/trainingjobs": JOBS, "POST/services": JOBS * SERVICES, "POST/pods": JOBS * REPLICAS}
    job_writes["PATCH/trainingjobs/status"] = 2 * JOBS
    assert {k: figures["plain_writes"]["writes"].get(k) for k in job_writes} == job_writes
    (op,) = figures["operator_runs"]
    assert op["latency"]["count"] == op["status_lag"]["count"] == JOBS
    assert op["fairness"]["status_lag"]["count"] == op["fairness"]["finished_lag"]["count"] == JOBS
    # The fairness phase's own waits: the new jobs' first passes and the finishing jobs' changes.
    assert op["fairness"]["waits"]["first passes"]["count"] == JOBS
    assert op["fairness"]["waits"]["queue wait: changes"]["count"] >= JOBS
    assert op["steady"]["change_from_patch"]["count"] == op["steady"]["change_from_pod"]["count"] == 2
    assert op["steady"]["cpu_percent"] >= 0
    # Measured only once the watches went quiet; what still changed is counted, not hidden.
    assert op["steady"]["waited"] >= 2.0
    assert op["steady"]["changes_seen"] >= 0
    assert op["steady"]["reconciles"] >= 0
    assert op["operator_end"]["peak_rss_mib"] > 0
    # Where a pass waits, from the operator's histograms: every job had a first pass, then passes
    # for its pods' changes, and its status patched twice.
    waits = op["waits"]
    assert set(waits) == {"queue wait: changes", "first passes", "reconcile", "PATCH", "POST"}
    assert waits["first passes"]["count"] >= JOBS
    assert waits["queue wait: changes"]["count"] >= JOBS
    assert waits["reconcile"]["count"] >= 2 * JOBS
    assert waits["PATCH"]["count"] >= 2 * JOBS
    assert waits["POST"]["count"] >= JOBS * (REPLICAS + SERVICES)
    # Pods, the job's Service and two status patches: no Events, no create refused.
    writes = {tuple(r["key"]): r["count"] for r in op["requests"] if r["who"] == "operator"}
    assert sum(writes.values()) <= JOBS * (REPLICAS + SERVICES + 2), writes


def _report(figures: dict[str, Any]) -> str:
    return report.report(figures)
