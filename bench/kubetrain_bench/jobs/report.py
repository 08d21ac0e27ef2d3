"""The jobs benchmark's report: its figures as text, in the format earlier runs printed (so that
figures stay comparable)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any


def fmt_latency(lat: Mapping[str, float]) -> str:
    if not lat:
        return ""
    return f"create→Running p50 {lat['p50']:.2f}s  p95 {lat['p95']:.2f}s  max {lat['max']:.2f}s"


def unfinished(phase: Mapping[str, Any]) -> str:
    if "done" not in phase:
        return "DID NOT FINISH (see the error below)"
    return f"NOT all Running: {phase['done']} of {phase['count']} (states: {phase['states']})"


def fmt_cpu(cpu: Mapping[str, float]) -> str:
    return ", ".join(f"{name} {s:.1f}s" for name, s in sorted(cpu.items(), key=lambda kv: -kv[1]))


def report(figures: Mapping[str, Any]) -> str:
    a = figures["args"]
    out = [
        f"kubetrain jobs benchmark: {a['jobs']} jobs x {a['replicas']} replicas = {a['jobs'] * a['replicas']} pods, "
        f"{a['nodes']} kwok nodes, create concurrency {a['concurrency']}, kube-scheduler QPS {a['scheduler_qps']:g}, "
        f"{os.cpu_count()} CPUs",
        f"cluster start ({a['nodes']} nodes):  {figures['cluster_start_seconds']:.1f}s"
        f"  (+ CRD {figures['crd_seconds']:.1f}s)",
    ]
    plain = figures.get("plain")
    for title, phase in (
        ("plain client, no operator (lower bound): {n} bare pods", plain),
        (
            "plain client, the same objects: {n} pods and their headless Services ({host_names})",
            figures.get("plain_services"),
        ),
        (
            "plain client, the same writes, no operator: {jobs} TrainingJobs, their Services ({host_names}) "
            "and {n} pods, 2 status patches each",
            figures.get("plain_writes"),
        ),
    ):
        if not phase:
            continue
        out += ["", title.format(n=phase["count"], jobs=a["jobs"], host_names=phase.get("host_names"))]
        if phase.get("seconds"):
            out.append(
                f"  all Running after     {phase['seconds']:.1f}s  ({phase['per_second']:.0f} pods/s; "
                f"creates took {phase['create_seconds']:.1f}s)"
            )
            out.append(f"  {fmt_latency(phase['latency'])}")
        else:
            out.append(f"  {unfinished(phase)}")
        out.append(f"  CPU used in phase     {fmt_cpu(phase['control_plane_cpu'])}")
        out += scheduler_lines(phase)
    for run in figures.get("operator_runs", []):
        out += [
            "",
            f"operator, --kube-api-qps {run['qps']:g} --kube-api-burst {run['burst']} "
            f"--max-concurrent-reconciles {a['workers']}: {run['count']} TrainingJobs"
            + (f" in {run['namespaces']} namespaces" if run.get("namespaces", 1) > 1 else ""),
        ]
        if run.get("seconds"):
            ratio = ""
            if plain and plain.get("seconds"):
                ratio = f", {run['seconds'] / plain['seconds']:.2f}x the plain client"
            for key, what in (("plain_services", "the same objects"), ("plain_writes", "the same writes")):
                if (same := figures.get(key) or {}).get("seconds"):
                    ratio += f", {run['seconds'] / same['seconds']:.2f}x {what}"
            out.append(
                f"  all Running after     {run['seconds']:.1f}s  ({run['per_second']:.1f} jobs/s{ratio}; "
                f"creates took {run['create_seconds']:.1f}s)"
            )
            out.append(f"  {fmt_latency(run['latency'])}")
            out.append(f"  {fmt_lag('status lag (last pod Running → job Running)', run['status_lag'])}")
            if t := run.get("pods"):
                out.append(
                    f"  pods (bench's watch)  half created after {t['created_p50']:.1f}s, all after "
                    f"{t['created_all']:.1f}s; half Running after {t['running_p50']:.1f}s, all after "
                    f"{t['running_all']:.1f}s"
                )
        else:
            out.append(f"  {unfinished(run)}")
        if "operator" in run:
            o = run["operator"]
            rec = run.get("reconciles", {})
            total = sum(rec.values())
            out.append(
                f"  operator process      peak RSS {o['peak_rss_mib']:.0f} MiB, CPU {o['cpu_seconds']:.1f}s, "
                f"{total:.0f} reconciles ({total / run['count']:.1f}/job"
                + (f", {rec.get('error', 0):.0f} errors" if rec.get("error") else "")
                + ")"
            )
        if waits := run.get("waits"):
            out.append(f"  operator's waits      {fmt_waits(waits)}")
        if "control_plane_cpu" in run:
            out.append(f"  CPU used in phase     {fmt_cpu(run['control_plane_cpu'])} (+ operator above)")
        out += scheduler_lines(run)
        if "requests" in run:
            out += request_table(run["requests"], run["count"], run.get("seconds"))
        if "audit" in run:
            out += audit_table(run["audit"], run["count"])
        out += fairness_lines(run.get("fairness"), plain)
        out += steady_lines(run.get("steady"))
        if "operator_end" in run:
            o = run["operator_end"]
            out.append(
                f"  operator at the end   peak RSS {o['peak_rss_mib']:.0f} MiB, RSS {o['rss_mib']:.0f} MiB, "
                f"CPU {o['cpu_seconds']:.1f}s"
            )
    return "\n".join(out)


def scheduler_lines(phase: Mapping[str, Any]) -> list[str]:
    """kube-scheduler's pace in a phase and its CPU per pod bound: what a pod's Services cost it."""
    b = phase.get("binds")
    if not b:
        return []
    cpu = phase.get("control_plane_cpu", {}).get("kube-scheduler")
    per_pod = f"; {1000 * cpu / b['count']:.1f} ms of CPU per pod" if cpu is not None else ""
    return [
        f"  kube-scheduler        {b['count']} pods bound, the last after {b['bound_all']:.1f}s; "
        f"{b['per_second']:.1f} binds/s from its first to its last{per_pod}"
    ]


def fmt_lag(what: str, lag: Mapping[str, float]) -> str:
    if not lag:
        return f"{what}: none measured"
    return f"{what}: p50 {lag['p50']:.3f}s  p99 {lag['p99']:.3f}s  max {lag['max']:.3f}s  ({lag['count']:.0f} jobs)"


def fairness_lines(f: Mapping[str, Any] | None, plain: Mapping[str, Any] | None) -> list[str]:
    if not f:
        return []
    out = ["", f"  fairness: {f.get('count', '?')} new TrainingJobs while as many running ones finish"]
    if f.get("seconds"):
        out.append(f"    new jobs all Running after {f['seconds']:.1f}s; {fmt_latency(f['latency'])}")
        out.append(f"    {fmt_lag('new jobs: status lag', f['status_lag'])}")
    else:
        out.append(f"    {unfinished(f)}")
    if "finished_lag" in f:
        out.append(f"    {fmt_lag('running jobs: Master Succeeded → job Succeeded', f['finished_lag'])}")
    if waits := f.get("waits"):
        out.append(f"    operator's waits meanwhile: {fmt_waits(waits)}")
    return out


def fmt_waits(waits: Mapping[str, Mapping[str, float]]) -> str:
    return ", ".join(
        f"{what} p50 {w['p50']:.3f}s p99 {w['p99']:.3f}s ({w['count']:.0f})" for what, w in waits.items()
    )


def steady_lines(st: Mapping[str, Any] | None) -> list[str]:
    if not st:
        return []
    return [
        "",
        f"  steady state: {st['jobs']} running jobs, quiet {st['waited']:.0f}s after all ran, then "
        f"{st['seconds']:.0f}s: operator CPU {st['cpu_percent']:.2f}% of one core "
        f"({st['reconciles']:.0f} reconciles; {st['changes_seen']} pod or job changes seen meanwhile)",
        f"    {fmt_lag('one change (a Master exits 0): patch sent → job Succeeded', st['change_from_patch'])}",
        f"    {fmt_lag('one change: Master seen Succeeded → job Succeeded', st['change_from_pod'])}",
        *_window_lines(st),
    ]


def _window_lines(st: Mapping[str, Any]) -> list[str]:
    """In the steady window: the control plane's CPU, and the operator's requests per job per hour."""
    if "requests" not in st:
        return []
    hours = st["elapsed"] / 3600
    cpu = ", ".join(
        f"{k} {v:.1f}%" for k, v in sorted(st["control_plane_cpu_percent"].items(), key=lambda kv: -kv[1])
    )
    out = [f"    in the window, CPU of one core: {cpu}"]
    for r in st["requests"]:
        if r["who"] not in ("operator", "operator?"):
            continue
        verb, group, resource, sub = r["key"]
        name = (f"{resource}.{group}" if group else resource) + (f"/{sub}" if sub else "")
        out.append(
            f"    {r['who']:<10} {verb:<6} {name:<46} {r['count'] / st['jobs'] / hours:>8.1f} /job/hour"
        )
    return out


def request_table(rows: list[dict[str, Any]], jobs: int, finished: float | None) -> list[str]:
    window = "first create → all Running + settle" if finished else "first create → timeout"
    out = [f"  API requests (apiserver_request_total delta, {window}):"]
    out.append(f"    {'who':<10} {'verb':<6} {'resource':<46} {'count':>7} {'/job':>7}  non-2xx")
    for r in rows:
        verb, group, resource, sub = r["key"]
        name = (f"{resource}.{group}" if group else resource) + (f"/{sub}" if sub else "") or "(non-resource)"
        who = r["who"]
        codes = " ".join(f"{code}x{n:.0f}" for code, n in sorted(r["codes"].items()))
        line = f"    {who:<10} {verb:<6} {name:<46} {r['count']:>7.0f} {r['count'] / jobs:>7.2f}  {codes}"
        out.append(line.rstrip())
    writes = sum(r["count"] for r in rows if r["who"] == "operator")
    reads = sum(r["count"] for r in rows if r["who"] == "operator?")
    out += [
        f"  operator: {writes / jobs:.2f} writes/job"
        + (f" (+ at most {reads / jobs:.2f} reads/job, the operator?'s rows)" if reads else ""),
        "    attributed by resource, as the metric has no client label: only the operator writes pods, services,",
        "    configmaps, core Events and TrainingJobs here, but a controller may read them too; and a WATCH",
        "    is counted when it ends, so watches still open are missing. --audit attributes exactly.",
    ]
    return out


def audit_table(rows: list[dict[str, Any]], jobs: int) -> list[str]:
    out = [
        "  API requests from the audit log (exact: by user for the operator and benchmark, else user agent):"
    ]
    out.append(f"    {'who':<24} {'verb':<7} {'resource':<46} {'count':>7} {'/job':>7}")
    for r in rows:
        out.append(
            f"    {r['who']:<24} {r['verb']:<7} {r['resource']:<46} {r['count']:>7} {r['count'] / jobs:>7.2f}"
        )
    total = sum(r["count"] for r in rows if r["who"] == "operator")
    out.append(f"  operator (audit, exact): {total / jobs:.2f} requests/job")
    return out
