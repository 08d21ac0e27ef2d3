"""The write costs per job, and as the report prints them."""

from __future__ import annotations

import argparse


def per_job(ms: dict[str, float], replicas: int, services: int) -> dict[str, float]:
    def pods(kind: str) -> float:
        return replicas * sum(ms[f"{kind}: {w}"] for w in ("create", "binding", "status Running"))

    bare = pods("bare pod")
    job = (
        ms["TrainingJob create"]
        + ms["TrainingJob status: Created"]
        + ms["TrainingJob status: Running"]
        + services * ms["Service create"]
        + pods("operator's pod")
    )
    return {"bare pods": bare, "operator": job, "ratio": job / bare}


def report(ms: dict[str, float], job: dict[str, float], args: argparse.Namespace) -> str:
    lines = [
        f"kube-apiserver CPU per write ({args.jobs} jobs x {args.replicas}, {args.host_names}, "
        f"{'without' if args.without_cel else 'with'} the CRD's CEL rules, {args.concurrency} at a time):",
        *(f"  {what:32s} {v:6.2f} ms" for what, v in ms.items()),
        f"per job: {args.replicas} bare pods {job['bare pods']:.2f} ms; the operator's writes "
        f"{job['operator']:.2f} ms: {job['ratio']:.2f}x the bare pods",
    ]
    return "\n".join(lines)
