"""References between short jobs and runtimes that cannot resolve, or only just do.

Each kind of :data:`KINDS` changes a short job's ``runtimeRef`` and says which runtimes must be
written first: TrainingRuntimes in the test namespace (copies of the shipped runtime the job was
made from, or runtimes built on one), which the runner writes, in order, before the document
(:attr:`Built.before`). A loop of runtimes, or a chain deeper than the expansion's limit, cannot be
stored while the runtimes' webhook checks them: for those the document is the runtime write that
would close the loop or pass the limit (a runtime document), and the short job naming it is
created only if that write was admitted (:attr:`Built.then`).

- ``ref_missing``: a runtime that is not there (of either kind);
- ``ref_kind``: the right name with the wrong kind (a ClusterTrainingRuntime named as a
  TrainingRuntime and the other way round), or a kind that is none;
- ``ref_namespace``: ``runtimeRef.namespace`` of another namespace, or said for a
  ClusterTrainingRuntime; or the job's own (admitted);
- ``ref_own``: a TrainingRuntime of the job's namespace, a copy of the shipped runtime or one that
  builds on it (admitted);
- ``ref_loop``: a runtime building on itself, or closing a loop of two or three;
- ``ref_chain``: a chain of exactly the limit (admitted), or a runtime that would make it one
  longer.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from collections.abc import Callable, Mapping
from typing import Any

from kubetrain.operator import expansion
from kubetrain_bench.hostile.shipped import CLUSTER_KIND, KIND

OTHER_NAMESPACE = "kube-system"
MAX_DEPTH = expansion.MAX_DEPTH


@dataclasses.dataclass
class Built:
    """A reference mutation's result: the document (a short job, or a runtime), what comes before
    and after it, and a description."""

    body: dict[str, Any]
    where: str
    family: str = "short"  # "short" (body is a job) or "runtime" (body is a runtime write)
    before: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    then: dict[str, Any] | None = None
    chain: list[Mapping[str, Any]] = dataclasses.field(default_factory=list)  # runtimes the job expands from


def training_runtime(shipped: Mapping[str, Any], name: str, **spec: Any) -> dict[str, Any]:
    """``shipped`` (a ClusterTrainingRuntime) as a TrainingRuntime named ``name``; ``spec`` replaces
    its spec's fields (``runtimeRef`` and nothing else: one that builds on another)."""
    body = copy.deepcopy(dict(shipped))
    body["kind"] = KIND
    body["metadata"] = {"name": name, "labels": dict(shipped["metadata"].get("labels") or {})}
    if spec:
        body["spec"] = {**({} if "runtimeRef" in spec else body["spec"]), **copy.deepcopy(spec)}
    return body


def _ref(kind: str, name: str, **more: Any) -> dict[str, Any]:
    return {"kind": kind, "name": name, **more}


def _job_naming(job: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(job)
    out["spec"]["runtimeRef"] = ref
    return out


def ref_missing(
    rng: random.Random, job: dict[str, Any], shipped: Mapping[str, Any], prefix: str, ns: str
) -> Built:
    ref = _ref(rng.choice((CLUSTER_KIND, KIND)), f"{prefix}-not-there")
    job["spec"]["runtimeRef"] = ref
    return Built(job, f"spec.runtimeRef = {ref['kind']} {ref['name']}")


def ref_kind(
    rng: random.Random, job: dict[str, Any], shipped: Mapping[str, Any], prefix: str, ns: str
) -> Built:
    mine = f"{prefix}-rt"
    choice = rng.randrange(4)
    if choice == 0:
        job["spec"]["runtimeRef"] = _ref(KIND, shipped["metadata"]["name"])
        return Built(job, "spec.runtimeRef: a ClusterTrainingRuntime named as a TrainingRuntime")
    if choice == 3:
        kind = rng.choice(("Bogus", "trainingruntime", "", "ClusterTrainingRuntimes", "Runtime"))
        job["spec"]["runtimeRef"] = _ref(kind, shipped["metadata"]["name"])
        return Built(job, f"spec.runtimeRef.kind = {kind!r}")
    job["spec"]["runtimeRef"] = _ref(CLUSTER_KIND, mine) if choice == 1 else {"name": mine}
    return Built(
        job,
        "spec.runtimeRef: a TrainingRuntime named as a ClusterTrainingRuntime"
        + (" (the default kind)" if choice == 2 else ""),
        before=[training_runtime(shipped, mine)],
    )


def ref_namespace(
    rng: random.Random, job: dict[str, Any], shipped: Mapping[str, Any], prefix: str, ns: str
) -> Built:
    mine = f"{prefix}-rt"
    choice = rng.randrange(4)
    if choice == 0:
        job["spec"]["runtimeRef"] = {"name": shipped["metadata"]["name"], "namespace": ns}
        return Built(job, "spec.runtimeRef.namespace of a ClusterTrainingRuntime")
    namespace = (OTHER_NAMESPACE, ns, rng.choice(("Bad_NS", "x" * 64, "")))[choice - 1]
    job["spec"]["runtimeRef"] = _ref(KIND, mine, namespace=namespace)
    runtime = training_runtime(shipped, mine)
    what = ("another namespace", "the job's own namespace", f"{namespace[:10]!r}")[choice - 1]
    return Built(job, f"spec.runtimeRef.namespace: {what}", before=[runtime], chain=[runtime])


def ref_own(
    rng: random.Random, job: dict[str, Any], shipped: Mapping[str, Any], prefix: str, ns: str
) -> Built:
    mine = f"{prefix}-rt"
    if rng.random() < 0.5:
        runtime = training_runtime(shipped, mine)
        chain: list[Mapping[str, Any]] = [runtime]
        what = "a copy of the shipped runtime"
    else:
        runtime = training_runtime(
            shipped,
            mine,
            runtimeRef={"name": shipped["metadata"]["name"]},
            runPolicy={"backoffLimit": 1},
        )
        chain = [runtime, shipped]
        what = f"built on ClusterTrainingRuntime {shipped['metadata']['name']}"
    job["spec"]["runtimeRef"] = _ref(KIND, mine)
    return Built(
        job, f"spec.runtimeRef: a TrainingRuntime of the namespace, {what}", before=[runtime], chain=chain
    )


def ref_loop(
    rng: random.Random, job: dict[str, Any], shipped: Mapping[str, Any], prefix: str, ns: str
) -> Built:
    size = rng.choice((1, 2, 3))
    names = [f"{prefix}-loop{i}" for i in range(size)]
    # loop0 is whole; loop1 builds on loop0, loop2 on loop1; then loop0 is written building on the last.
    before = [training_runtime(shipped, names[0])]
    before += [
        training_runtime(shipped, names[i], runtimeRef=_ref(KIND, names[i - 1])) for i in range(1, size)
    ]
    closing = training_runtime(shipped, names[0])
    closing["spec"]["runtimeRef"] = _ref(KIND, names[-1])
    return Built(
        closing,
        f"spec.runtimeRef: a loop of {size} runtime{'s' if size > 1 else ''}",
        family="runtime",
        before=before[1:] if size == 1 else before,
        then=_job_naming(job, _ref(KIND, names[0])),
    )


def ref_chain(
    rng: random.Random, job: dict[str, Any], shipped: Mapping[str, Any], prefix: str, ns: str
) -> Built:
    names = [f"{prefix}-c{i}" for i in range(MAX_DEPTH + 1)]
    runtimes = [training_runtime(shipped, names[0])]
    runtimes += [
        training_runtime(
            shipped, names[i], runtimeRef=_ref(KIND, names[i - 1]), runPolicy={"backoffLimit": i}
        )
        for i in range(1, MAX_DEPTH + 1)
    ]
    chain: list[Mapping[str, Any]] = list(reversed(runtimes))
    if rng.random() < 0.5:  # exactly the limit: the job names the last of MAX_DEPTH
        job["spec"]["runtimeRef"] = _ref(KIND, names[MAX_DEPTH - 1])
        return Built(
            job,
            f"spec.runtimeRef: a chain of {MAX_DEPTH} runtimes",
            before=runtimes[:MAX_DEPTH],
            chain=chain[1:],
        )
    return Built(
        runtimes[MAX_DEPTH],
        f"spec.runtimeRef: a chain of {MAX_DEPTH + 1} runtimes",
        family="runtime",
        before=runtimes[:MAX_DEPTH],
        then=_job_naming(job, _ref(KIND, names[MAX_DEPTH])),
        chain=chain,
    )


Reference = Callable[[random.Random, dict[str, Any], Mapping[str, Any], str, str], Built]
KINDS: dict[str, Reference] = {
    "ref_missing": ref_missing,
    "ref_kind": ref_kind,
    "ref_namespace": ref_namespace,
    "ref_own": ref_own,
    "ref_loop": ref_loop,
    "ref_chain": ref_chain,
}
