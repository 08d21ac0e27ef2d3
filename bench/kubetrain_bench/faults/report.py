"""The fault benchmark's figures: the faults injected and the jobs' recoveries, and the checks."""

from __future__ import annotations

import collections
import json
from collections.abc import Sequence
from typing import Any

from kubetrain_bench import stats
from kubetrain_bench.faults.checks import Verdict
from kubetrain_bench.faults.faults import Injected


def figures(
    injected: Sequence[Injected], verdicts: Sequence[Verdict], jobs: dict[str, dict[str, Any]], seconds: float
) -> dict[str, Any]:
    by_kind: dict[str, list[Injected]] = collections.defaultdict(list)
    for i in injected:
        by_kind[i.kind].append(i)
    return {
        "seconds": round(seconds, 1),
        "faults": [
            {
                "kind": i.kind,
                "target": i.target,
                "jobs": list(i.jobs),
                "lasted": round(i.end - i.start, 1),
                "recovered": None if i.recovered is None else round(i.recovered, 1),
                "note": i.note,
            }
            for i in injected
        ],
        "kinds": {
            kind: {
                "count": len(items),
                "recovered": sum(i.recovered is not None for i in items),
                "recovery_p50": stats.percentiles(
                    [i.recovered for i in items if i.recovered is not None]
                ).get("p50"),
            }
            for kind, items in sorted(by_kind.items())
        },
        "jobs": {
            name: {
                "state": job.get("status", {}).get("state"),
                "restarts": job.get("status", {}).get("restarts", {}),
                "failures": len(job.get("status", {}).get("failures", [])),
            }
            for name, job in jobs.items()
        },
        "checks": [{"name": v.name, "ok": v.ok, "detail": v.detail} for v in verdicts],
    }


def show(f: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(f))
        return
    print(f"Faults on real nodes: {len(f['faults'])} injected in {f['seconds']:.0f} s")
    print(f"  {'#':>2} {'fault':22} {'target':34} {'jobs':24} {'lasted':>7} {'back after':>10}")
    for n, i in enumerate(f["faults"], 1):
        back = "never" if i["recovered"] is None else f"{i['recovered']:.1f}"
        print(
            f"  {n:>2} {i['kind']:22} {i['target'][:34]:34} {','.join(i['jobs'])[:24]:24} {i['lasted']:>7} {back:>10}"
        )
    print(f"  {'fault':22} {'count':>5} {'recovered':>9} {'p50 s':>7}")
    for kind, k in f["kinds"].items():
        p50 = "-" if k["recovery_p50"] is None else f"{k['recovery_p50']:.1f}"
        print(f"  {kind:22} {k['count']:>5} {k['recovered']:>9} {p50:>7}")
    print(f"  {'job':16} {'state':10} {'failures':>8}  restarts")
    for name, j in f["jobs"].items():
        print(f"  {name:16} {j['state']!s:10} {j['failures']:>8}  {j['restarts']}")
    print(f"  {'check':28} verdict")
    for c in f["checks"]:
        print(f"  {c['name']:28} {'ok' if c['ok'] else 'VIOLATED'}: {c['detail']}")
