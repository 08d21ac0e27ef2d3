"""What became of each hostile document, and the report of a run: counts by class (the classes
:mod:`kubetrain_bench.hostile.runner` puts documents in), version, sample and mutation kind,
latencies, rejection messages, and one example of every kind of failure."""

from __future__ import annotations

import collections
import dataclasses
import json
import pathlib
import re
from collections.abc import Callable, Iterable
from typing import Any

from kubetrain_bench.stats import percentile

REJECTED_WITH_PATH = "rejected_with_path"
REJECTED_WITHOUT_PATH = "rejected_without_path"
ACCEPTED = "accepted"
ACCEPTED_UNRUNNABLE = "accepted_unrunnable"
SERVER_ERROR = "server_error"
CLASSES = (REJECTED_WITH_PATH, REJECTED_WITHOUT_PATH, ACCEPTED, ACCEPTED_UNRUNNABLE, SERVER_ERROR)
# A field path in a message: spec.…, metadata.…, or (the apiserver's own JSON decoding, before any
# validation) "Go struct field ObjectMeta.name".
FIELD_PATH = re.compile(r"\b(spec|metadata)(\.|\[|:)|Go struct field \w+\.\w+")
TRACEBACK = "Traceback (most recent call last)"


@dataclasses.dataclass
class Result:
    index: int
    name: str | None
    version: str
    sample: str
    kinds: tuple[str, ...]
    label: str
    outcome: str
    status: int | None  # the create's HTTP status (201 when created; None: no answer)
    message: str  # the apiserver's message, or for accepted_unrunnable what was wrong
    latency: float  # seconds the create call took
    family: str = "job"  # "job", "short" (made from a runtime) or "runtime" (a runtime written)
    runtimes: tuple[str, ...] = ()  # the runtimes the document wrote (deleted once it is done)
    idle: bool = False  # accepted, and nothing to run (suspended, managed elsewhere)
    waiting: bool = False  # accepted, but objects still missing behind pods the scheduler cannot place
    detail: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Report:
    results: list[Result]
    seconds: float
    tracebacks: int
    traceback_lines: list[str]  # the last line of each distinct traceback
    alpha_lists: int
    alpha_list_failures: list[str]
    manager_alive: bool
    peak_pods: int = 0  # the most pods in the namespace at once (the nodes hold 110 each)

    def counts(self, results: Iterable[Result] | None = None) -> dict[str, int]:
        got = collections.Counter(r.outcome for r in (self.results if results is None else results))
        return {k: got.get(k, 0) for k in CLASSES}

    @property
    def alpha_list_failed(self) -> bool:
        return bool(self.alpha_list_failures)

    def failures(self) -> list[Result]:
        return [r for r in self.results if r.outcome in (ACCEPTED_UNRUNNABLE, SERVER_ERROR)]

    def ok(self) -> bool:
        c = self.counts()
        return (
            c[ACCEPTED_UNRUNNABLE] == 0
            and c[SERVER_ERROR] == 0
            and self.tracebacks == 0
            and not self.alpha_list_failed
            and self.manager_alive
        )

    def summary(self) -> dict[str, Any]:
        """The figures, as JSON-ready data."""
        latencies = [r.latency for r in self.results]
        return {
            "documents": len(self.results),
            "seconds": round(self.seconds, 1),
            "counts": self.counts(),
            "idle": sum(r.idle for r in self.results),
            "job_refused": sum(r.outcome == ACCEPTED and "job_refused" in r.detail for r in self.results),
            "before_refused": sum("before_refused" in r.detail for r in self.results),
            "waiting_on_scheduler": sum(r.waiting for r in self.results),
            "tracebacks": self.tracebacks,
            "alpha_lists": self.alpha_lists,
            "alpha_list_failures": len(self.alpha_list_failures),
            "manager_alive": self.manager_alive,
            "peak_pods": self.peak_pods,
            "latency_p50_ms": round(percentile(latencies, 50) * 1000, 1),
            "latency_p99_ms": round(percentile(latencies, 99) * 1000, 1),
        }

    def format(self, top: int = 12) -> str:
        """The report as text: classes, versions, mutation kinds, latencies, and every kind of failure."""
        s = self.summary()
        out = [
            f"{s['documents']} documents in {self.seconds:.1f}s "
            f"({s['documents'] / max(self.seconds, 1e-9):.1f}/s); "
            f"create latency p50 {s['latency_p50_ms']} ms, p99 {s['latency_p99_ms']} ms",
            "",
            "outcome                   count",
        ]
        for k, n in s["counts"].items():
            note = f"  ({s['idle']} idle, {s['waiting_on_scheduler']} waiting on the scheduler"
            note += f", {s['job_refused']} runtimes whose job was refused)" if s["job_refused"] else ")"
            out.append(f"  {k:<23} {n:>5}" + (note if k == ACCEPTED else ""))
        out += [
            f"  {'operator tracebacks':<23} {self.tracebacks:>5}",
            f"  {'v1alpha1 LIST failed':<23} {len(self.alpha_list_failures):>5}  of {self.alpha_lists} lists",
            f"  {'manager alive':<23} {'yes' if self.manager_alive else 'NO':>5}",
            f"  {'pods at once, at most':<23} {self.peak_pods:>5}",
            "",
            self._table("family", lambda r: [r.family]),
            "",
            self._table("version", lambda r: [r.version]),
            "",
            self._table("sample", lambda r: [r.sample]),
            "",
            self._table("mutation kind", lambda r: list(r.kinds) or ["(unmutated)"]),
        ]
        lat = collections.defaultdict(list)
        for r in self.results:
            lat[r.outcome].append(r.latency)
        out += ["", "create latency by outcome (ms): p50 / p99"]
        out += [
            f"  {k:<23} {percentile(v, 50) * 1000:8.1f} / {percentile(v, 99) * 1000:8.1f}"
            for k, v in sorted(lat.items())
        ]
        rejections = collections.Counter(
            normalize(r.message) for r in self.results if r.outcome.startswith("rejected")
        )
        out += ["", f"top {top} rejection messages (names and numbers masked)"]
        out += [f"  {n:>5}  {m[:160]}" for m, n in rejections.most_common(top)]
        refused_jobs = collections.Counter(
            normalize(r.detail["job_refused"])
            for r in self.results
            if r.outcome == ACCEPTED and "job_refused" in r.detail
        )
        if refused_jobs:
            out += ["", f"top {top} refusals of a stored runtime's short job"]
            out += [f"  {n:>5}  {m[:160]}" for m, n in refused_jobs.most_common(top)]
        per_kind: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for r in self.results:
            if r.outcome.startswith("rejected"):
                for k in r.kinds:
                    per_kind[k][normalize(r.message)] += 1
        out += ["", "most common rejection per mutation kind"]
        for k, msgs in sorted(per_kind.items()):
            m, n = msgs.most_common(1)[0]
            out.append(f"  {k:<20} {n:>5}/{sum(msgs.values()):<5} {m[:150]}")
        for outcome in (ACCEPTED_UNRUNNABLE, SERVER_ERROR, REJECTED_WITHOUT_PATH):
            bad = [r for r in self.results if r.outcome == outcome]
            if not bad:
                continue
            out += ["", f"{outcome}: {len(bad)}, by mutation kind (one example each)"]
            by_kind: dict[str, list[Result]] = collections.defaultdict(list)
            for r in bad:
                for k in r.kinds or ("(unmutated)",):
                    by_kind[k].append(r)
            for k, rs in sorted(by_kind.items(), key=lambda kv: -len(kv[1])):
                e = rs[0]
                out.append(f"  {k:<20} {len(rs):>5}  e.g. #{e.index} {e.sample}: {e.label[:140]}")
                out.append(f"  {'':<27}-> {e.message[:300]}")
        before = [r for r in self.results if "before_refused" in r.detail]
        if before:
            out += [
                "",
                f"a runtime written before the document refused: {len(before)} (one example each kind)",
            ]
            seen: set[str] = set()
            for r in before:
                if r.kinds[:1] != () and r.kinds[0] not in seen:
                    seen.add(r.kinds[0])
                    out.append(f"  e.g. #{r.index} {r.sample}: {r.label[:120]}")
                    out.append(f"  {'':<4}-> {r.detail['before_refused'][0][:300]}")
        waiting = [r for r in self.results if r.waiting]
        if waiting:
            reasons = collections.Counter(
                normalize(m) for r in waiting for m in set(r.detail.get("unschedulable", {}).values())
            )
            samples = collections.Counter(r.sample for r in waiting)
            out += ["", f"accepted, waiting on the scheduler: {len(waiting)} (by sample: "]
            out[-1] += ", ".join(f"{k} {n}" for k, n in samples.most_common()) + ")"
            out += [f"  {n:>5}  {m[:200]}" for m, n in reasons.most_common(5)]
        if self.traceback_lines:
            out += ["", "manager tracebacks end with:"] + [f"  {t[:200]}" for t in self.traceback_lines[:10]]
        if self.alpha_list_failures:
            out += ["", "v1alpha1 LIST failures:"] + [f"  {m[:300]}" for m in self.alpha_list_failures[:5]]
        return "\n".join(out)

    def _table(self, title: str, keys: Callable[[Result], list[str]]) -> str:
        rows: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for r in self.results:
            for k in keys(r):
                rows[k][r.outcome] += 1
                rows[k]["docs"] += 1
        short = {
            REJECTED_WITH_PATH: "rej+path",
            REJECTED_WITHOUT_PATH: "rej-path",
            ACCEPTED: "accepted",
            ACCEPTED_UNRUNNABLE: "unrunnable",
            SERVER_ERROR: "5xx",
        }
        head = f"{title:<24} {'docs':>6}" + "".join(f" {short[c]:>10}" for c in CLASSES)
        lines = [head]
        for k, row in sorted(rows.items(), key=lambda kv: -kv[1]["docs"]):
            lines.append(f"  {k[:22]:<22} {row['docs']:>6}" + "".join(f" {row[c]:>10}" for c in CLASSES))
        return "\n".join(lines)


def normalize(message: str) -> str:
    """A rejection message with document names, quoted values and numbers masked, to group alike ones."""
    m = re.sub(r'"h\d{5,}[^"]*"', '"NAME"', message)
    m = re.sub(r"h\d{5,}-[a-z0-9-]*", "NAME", m)
    m = re.sub(r"\d+", "N", m)
    return m[:400]


def classify(status: int, reason: str, message: str) -> str:
    if status >= 500 or reason == "InternalError" or "failed calling webhook" in message:
        return SERVER_ERROR
    if FIELD_PATH.search(message):
        return REJECTED_WITH_PATH
    return REJECTED_WITHOUT_PATH


def count_tracebacks(log: pathlib.Path | None) -> tuple[int, list[str]]:
    """How many tracebacks the log holds, and the distinct last lines of them."""
    if log is None or not log.exists():
        return 0, []
    lines = log.read_text(errors="replace").splitlines()
    count, ends = 0, []
    for i, line in enumerate(lines):
        if TRACEBACK in line:
            count += 1
            # The exception line: the first line after the traceback that is not indented.
            end = next((x for x in lines[i + 1 : i + 400] if x and not x.startswith((" ", "\t"))), "")
            if end and end not in ends:
                ends.append(end)
    return count, ends


def to_json(report: Report) -> str:
    return json.dumps(
        {
            "summary": report.summary(),
            "failures": [dataclasses.asdict(r) for r in report.failures()],
            "waiting_on_scheduler": [dataclasses.asdict(r) for r in report.results if r.waiting],
            "tracebacks": report.traceback_lines,
            "alpha_list_failures": report.alpha_list_failures,
        },
        indent=1,
    )
