"""The figures of a run of hostile files: outcomes, times, memory, and every problem found."""

from __future__ import annotations

import collections
import json
from collections.abc import Sequence
from typing import Any

from kubetrain_bench import stats
from kubetrain_bench.files import doors, runner

MIB = 1 << 20


def figures(results: Sequence[runner.Result], seconds: float, baseline_rss: int) -> dict[str, Any]:
    by_door: dict[str, collections.Counter[str]] = {d: collections.Counter() for d in doors.DOORS}
    times: dict[str, list[float]] = {d: [] for d in doors.DOORS}
    lines: collections.Counter[int] = collections.Counter()
    for r in results:
        for o in r.outcomes:
            times[o.door].append(o.seconds)
            by_door[o.door][_outcome(o)] += 1
            if o.code == 1:
                lines[sum(1 for line in o.err if line.startswith("error: "))] += 1
    every = [t for ts in times.values() for t in ts]
    slowest = max(results, key=lambda r: max((o.seconds for o in r.outcomes), default=0.0), default=None)
    biggest = max(results, key=lambda r: r.rss, default=None)
    problems = [(r, p) for r in results for p in r.problems]
    return {
        "cases": len(results),
        "runs": sum(len(r.outcomes) for r in results),
        "from_stdin": sum(r.stdin for r in results),
        "kinds": dict(collections.Counter(r.case.kind for r in results).most_common()),
        "expected": dict(collections.Counter(r.case.made.expect for r in results)),
        "bytes": {"total": sum(r.size for r in results), "max": max((r.size for r in results), default=0)},
        "outcomes": {d: dict(c.most_common()) for d, c in by_door.items()},
        "error_lines_per_refusal": dict(sorted(lines.items())),
        "seconds": {d: _round(stats.percentiles(ts)) for d, ts in times.items()},
        "max_seconds": round(max(every, default=0.0), 3),
        "slowest": _case(slowest),
        "rss_mib": {
            "max": round(max((r.rss for r in results), default=0) / MIB, 1),
            "p99": round(stats.percentile([r.rss for r in results], 99) / MIB, 1),
            "parent": round(baseline_rss / MIB, 1),
        },
        "biggest": _case(biggest),
        "problems": len(problems),
        "problem_kinds": dict(
            collections.Counter(p.split(":")[0] + ": " + _first(p) for _r, p in problems).most_common()
        ),
        "examples": [{"problem": p, **_case(r)} for r, p in problems[:30]],
        "total_seconds": round(seconds, 1),
    }


def _outcome(o: doors.Outcome) -> str:
    if o.crash is not None or o.code not in (0, 1):
        return "crash"
    if o.code == 0:
        return "done"
    first = next((line for line in o.err if line.startswith("error: ")), "")
    return "no cluster" if doors.UNREACHABLE.match(first) else "refused"


def _first(problem: str) -> str:
    words = problem.split(": ", 1)[1] if ": " in problem else problem
    return words.split(":")[0][:60]


def _case(r: runner.Result | None) -> dict[str, Any]:
    if r is None:
        return {}
    return {
        "case": r.case.index,
        "label": r.case.label[:160],
        "bytes": r.size,
        "stdin": r.stdin,
        "seconds": {o.door: round(o.seconds, 3) for o in r.outcomes},
        "rss_mib": round(r.rss / MIB, 1),
    }


def _round(values: dict[str, float]) -> dict[str, float]:
    return {k: (round(v, 4) if k != "count" else v) for k, v in values.items()}


def text(f: dict[str, Any]) -> str:
    out = [
        f"hostile files: {f['cases']:,} cases ({f['from_stdin']:,} on standard input), "
        f"{f['runs']:,} runs through {', '.join(doors.DOORS)}; {f['bytes']['total'] / MIB:,.0f} MiB "
        f"(largest {f['bytes']['max'] / MIB:.1f} MiB); {f['total_seconds']:,.0f} s",
        "kinds: " + ", ".join(f"{k} {n}" for k, n in f["kinds"].items()),
        "expected: " + ", ".join(f"{k} {n}" for k, n in f["expected"].items()),
        "",
        "outcomes by door (done / refused with FILE:LINE:COLUMN / no cluster / crash):",
    ]
    for door, counts in f["outcomes"].items():
        out.append(
            f"  {door:8} done {counts.get('done', 0):6,}  refused {counts.get('refused', 0):6,}  "
            f"no cluster {counts.get('no cluster', 0):5,}  crash {counts.get('crash', 0)}"
        )
    out.append(
        "error lines per refusal: "
        + ", ".join(f"{n}: {c:,}" for n, c in f["error_lines_per_refusal"].items())
    )
    out.append("")
    out.append("seconds by door (p50 / p99 / max):")
    for door, s in f["seconds"].items():
        if s:
            out.append(f"  {door:8} {s['p50']:.4f} / {s['p99']:.4f} / {s['max']:.3f}")
    out.append(f"max time of one door: {f['max_seconds']:.3f} s ({f['slowest'].get('label', '')})")
    rss = f["rss_mib"]
    out.append(
        f"peak RSS of a case's process: max {rss['max']} MiB, p99 {rss['p99']} MiB (it inherits the "
        f"runner's {rss['parent']} MiB) ({f['biggest'].get('label', '')})"
    )
    out.append("")
    out.append(f"problems: {f['problems']}")
    for kind, n in f["problem_kinds"].items():
        out.append(f"  {n:5}  {kind}")
    for e in f["examples"][:10]:
        out.append(f"  e.g. case {e['case']} ({e['label']}): {e['problem']}")
    return "\n".join(out)


def to_json(f: dict[str, Any]) -> str:
    return json.dumps(f, indent=2)
