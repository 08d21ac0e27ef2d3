"""The apiserver's requests in a window: ``apiserver_request_total`` scraped before and after, the
delta attributed to who makes such requests; or, with ``--audit``, read exactly from the audit log."""

from __future__ import annotations

import collections
import json
import pathlib
from collections.abc import Mapping
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from kubetrain.devcluster import cluster as devcluster
from kubetrain_bench.jobs.common import BENCH_USER, OPERATOR_USER, RowKey


def request_totals(c: devcluster.Cluster) -> dict[tuple[str, str, str, str, str], float]:
    """apiserver_request_total by (verb, group, resource, subresource, code)."""
    text = c.kubectl("get", "--raw", "/metrics").stdout
    totals: dict[tuple[str, str, str, str, str], float] = collections.defaultdict(float)
    for family in text_string_to_metric_families(text):
        if family.name != "apiserver_request":
            continue
        for s in family.samples:
            if s.name != "apiserver_request_total":
                continue
            lb = s.labels
            key = (
                lb["verb"],
                lb.get("group", ""),
                lb.get("resource", ""),
                lb.get("subresource", ""),
                lb["code"],
            )
            totals[key] += s.value
    return totals


def attribute(verb: str, group: str, resource: str, subresource: str) -> str:
    """Who, in this cluster, makes requests like these ("operator?": the operator or a controller)."""
    read = verb in ("GET", "LIST", "WATCH")
    if group == "events.k8s.io":
        return "scheduler"
    if group == "" and resource == "pods" and subresource == "binding":
        return "scheduler"
    if group == "" and resource in ("nodes", "pods") and subresource == "status":
        return "kwok"
    if group == "scheduling.k8s.io" and resource == "podgroups":  # the operator's gangs
        return "scheduler" if subresource == "status" else "operator?" if read else "operator"
    if (group == "" and resource in ("pods", "services", "configmaps", "events", "nodes")) or (
        group == "training.kubetrain.dev" and resource == "trainingjobs"
    ):
        return "operator?" if read else "operator" if resource != "nodes" else "other"
    return "other"


def request_rows(
    before: Mapping[tuple[str, str, str, str, str], float],
    after: Mapping[tuple[str, str, str, str, str], float],
    own: Mapping[RowKey, int],
) -> list[dict[str, Any]]:
    """The delta by (verb, group, resource, subresource), attributed; the benchmark's own requests split off."""
    count: dict[RowKey, float] = collections.defaultdict(float)
    failed: dict[RowKey, dict[str, float]] = collections.defaultdict(dict)
    for labels, value in after.items():
        delta = value - before.get(labels, 0.0)
        if delta <= 0:
            continue
        verb, group, resource, subresource, code = labels
        count[verb, group, resource, subresource] += delta
        if not code.startswith("2"):
            failed[verb, group, resource, subresource][code] = delta
    rows: list[dict[str, Any]] = []
    for key, n in count.items():
        mine = min(float(own.get(key, 0)), n)
        if mine:
            rows.append({"who": "benchmark", "key": key, "count": mine, "codes": {}})
        if n - mine > 0:
            rows.append({"who": attribute(*key), "key": key, "count": n - mine, "codes": failed[key]})
    order = {"operator": 0, "operator?": 1, "scheduler": 2, "kwok": 3, "benchmark": 4, "other": 5}
    rows.sort(key=lambda r: (order[r["who"]], -r["count"]))
    return rows


def audit_rows(path: pathlib.Path, offset: int) -> list[dict[str, Any]]:
    """Requests in the audit log since ``offset``, exactly attributed by user, else by user agent."""
    counts: dict[tuple[str, str, str], int] = collections.Counter()
    seen: set[str] = set()
    with path.open("rb") as f:
        f.seek(offset)
        for line in f:
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:  # a line still being written
                continue
            if ev.get("auditID") in seen:  # a watch logs ResponseStarted, then ResponseComplete
                continue
            seen.add(ev.get("auditID"))
            user = ev.get("user", {}).get("username", "")
            if user == OPERATOR_USER:
                who = "operator"
            elif user == BENCH_USER:
                who = "benchmark"
            else:
                who = (ev.get("userAgent") or "?").split("/")[0]
            ref = ev.get("objectRef") or {}
            if "resource" in ref:
                resource = ref["resource"] + (f".{ref['apiGroup']}" if ref.get("apiGroup") else "")
                resource += f"/{ref['subresource']}" if ref.get("subresource") else ""
            else:  # a non-resource URL
                resource = ev.get("requestURI", "?").split("?")[0]
            counts[who, ev.get("verb", "?"), resource] += 1
    order = {"operator": 0, "kube-scheduler": 1, "kwok": 2, "benchmark": 3}
    rows: list[dict[str, Any]] = [
        {"who": who, "verb": verb, "resource": resource, "count": n}
        for (who, verb, resource), n in counts.items()
    ]
    rows.sort(key=lambda r: (order.get(r["who"], 9), r["who"], -r["count"]))
    return rows
