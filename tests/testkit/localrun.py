"""The realcode tier's one way to start replicas: the product's local runner (kubetrain run --local).

:func:`run` runs a TrainingJob with :mod:`kubetrain.operator.local` — every replica a process with
the env the operator renders for its pod, 127.0.0.1 and a port of its own, the operator's own
decisions — and returns what each replica wrote (:class:`Ran`). The processes get the pod's env
over a bare environment (``PATH``, ``HOME``, ``LANG``): nothing else of the test runner's
environment reaches them, so a stray variable cannot stand in for one a plugin forgot. A run
that does not end as expected (or outlives its timeout, and is stopped) fails the test with
every replica's last lines.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from kubetrain.api import naming, v1beta1
from kubetrain.operator import local
from kubetrain.operator.frameworks import registry

__all__ = ["Ran", "RunFailedError", "everything_succeeds", "image_env", "run", "with_command"]

_TAIL = 40


class RunFailedError(AssertionError):
    """The run did not end as the test expected; the message holds every replica's output."""


@attrs.frozen(kw_only=True)
class Ran:
    outcome: local.Outcome
    said: tuple[local.Said, ...]
    launches: Mapping[str, local.Launch]  # every pod of attempt 0, as it was started, by pod name
    addresses: Mapping[str, str]  # every pod's host:port
    seconds: float

    def lines(self, replica: str | None = None, *, notices: bool = False) -> list[str]:
        """What ``replica`` (``worker-1``; every replica: None) wrote, in order."""
        return [
            s.text
            for s in self.said
            if isinstance(s, local.Line)
            and (replica is None or s.replica == replica)
            and (notices or not s.notice)
        ]

    def json(self, replica: str | None = None) -> list[dict[str, Any]]:
        """Every JSON object a replica printed on a line of its own."""
        return [json.loads(line) for line in self.lines(replica) if line.startswith("{")]

    def env(self, pod: str) -> Mapping[str, str]:
        return self.launches[pod].env

    @property
    def replicas(self) -> list[str]:
        return sorted({s.replica for s in self.said if isinstance(s, local.Line)})


def with_command(
    tmpl_container: str, command: Sequence[str], env: Mapping[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    """A pod template whose main container (named ``tmpl_container``) runs ``command`` with ``env``
    (what an image would set)."""
    c: dict[str, Any] = {"name": tmpl_container, "image": "local", "command": list(command)}
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return {"spec": {"containers": [c], **spec}}


def image_env(**env: str) -> dict[str, str]:
    return dict(env)


def everything_succeeds(job: v1beta1.TrainingJob) -> v1beta1.TrainingJob:
    """The job succeeds once every replica has (its success policy), and a failed replica fails it
    (restart policy ``Never``): a contract test reads every replica's output, and a broken
    contract ends the run at once."""
    targets = tuple(v1beta1.SuccessTarget(replica_type=k) for k in job.spec.replica_specs)
    specs = {
        k: attrs.evolve(s, restart_policy=v1beta1.RestartPolicy.NEVER)
        for k, s in job.spec.replica_specs.items()
    }
    spec = attrs.evolve(job.spec, replica_specs=specs, success_policy=v1beta1.SuccessPolicy(targets=targets))
    return attrs.evolve(job, spec=spec)


def run(
    job: v1beta1.TrainingJob,
    workdir: Path,
    *,
    timeout: float = 120.0,
    expect: v1beta1.JobState = v1beta1.JobState.SUCCEEDED,
    change: Callable[[v1beta1.TrainingJob], v1beta1.TrainingJob] | None = None,
    watch: Callable[[local.Said], None] | None = None,
) -> Ran:
    """Run ``job`` through the local runner until it ends; :class:`RunFailedError` unless it ends
    ``expect``."""
    fw = registry.default().get(job.spec.framework.name)
    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workdir), "LANG": "C.UTF-8"}
    # Free ports: other runs (other tests, other people's) may listen on a job's own ports.
    options = local.Options(cwd=str(workdir), environ=environ, free_ports=True)
    ready = local.prepare(v1beta1.trainingjob_defaults.on_create(job), fw, options)
    launches = {launch.pod: launch for launch in ready.launches(ready.job)}
    said: list[local.Said] = []

    def tell(s: local.Said) -> None:
        said.append(s)
        if watch is not None:
            watch(s)

    began = time.monotonic()
    outcome = local.run(ready, tell, stopping=lambda: time.monotonic() - began > timeout, change=change)
    addresses = {
        naming.replica_name(job.metadata.name or "", key, i): f"{a.host}:{a.port}"
        for (key, i), a in ready.machine.addresses.items()
    }
    ran = Ran(
        outcome=outcome,
        said=tuple(said),
        launches=launches,
        addresses=addresses,
        seconds=time.monotonic() - began,
    )
    if outcome.stopped or outcome.state is not expect:
        why = f"timed out after {timeout:.0f}s" if outcome.stopped else f"ended {outcome.state.value}"
        raise RunFailedError(
            "\n".join([f"{job.metadata.name}: {why}, expected {expect.value}", *_tails(ran)])
        )
    return ran


def _tails(ran: Ran) -> list[str]:
    out = []
    for s in ran.outcome.job.status.failures:
        out.append(f"failure: {s.replica_type}/{s.index} {s.reason} exit {s.exit_code} -> {s.action.value}")
    for replica in ran.replicas:
        lines = ran.lines(replica, notices=True)
        out.append(f"--- {replica} (last {min(len(lines), _TAIL)} of {len(lines)} lines):")
        out += lines[-_TAIL:]
    return out
