"""A job made ready to run locally, or every reason it cannot: all said before anything starts.

:func:`prepare` takes a whole job (decoded as admission decodes it, a short job expanded from
its runtime first) and its framework, gives every replica its address on this machine
(:mod:`.machine`), renders every pod as the reconciler would — the same
:func:`kubetrain.operator.render.render`, with those addresses — and reads each as a process
(:mod:`.plan`). Every reason a pod cannot run here, and every port something already listens
on, is gathered into one :class:`~.plan.NotRunnableError`: a person fixes them all at once, before any
process has started. What runs differently from a cluster is said as warnings.

:meth:`Prepared.launches` is what the executor calls for the pods a step creates: the same
render, for those pods alone, with the job's status of the moment (its attempts, restarts and
last restart's reason: the restart env every main container gets).
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Collection, Mapping

import attrs

from kubetrain.api import naming, v1beta1
from kubetrain.operator import render
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.local import machine as machine_
from kubetrain.operator.local import plan
from kubetrain.operator.scheduling import backend

__all__ = ["RUN_DIR", "SCHEDULER", "Options", "Prepared", "prepare"]

# Where runs keep their folders, under the directory kubetrain run starts in.
RUN_DIR = pathlib.Path(".kubetrain") / "run"
# No gang scheduler and no queue on one machine: every pod starts as it is made.
SCHEDULER = attrs.evolve(backend.NONE, own_queues=True)


@attrs.frozen(kw_only=True)
class Options:
    """How to run: where (``cwd``, the run directory ``run_dir``, default ``.kubetrain/run``
    under ``cwd``), in which environment (default: this process's), whether containers other
    than the main one are left out (else refused), and whether replicas get any free ports
    instead of their type's port plus their position (:mod:`.machine`)."""

    cwd: str = attrs.field(factory=os.getcwd)
    run_dir: str | None = None
    environ: Mapping[str, str] | None = None
    skip_extra: bool = False
    free_ports: bool = False


@attrs.frozen(kw_only=True)
class Prepared:
    job: v1beta1.TrainingJob
    fw: fw_contract.Framework
    machine: fw_contract.Machine
    root: pathlib.Path  # the run directory
    options: Options
    warnings: tuple[str, ...] = ()

    @property
    def environ(self) -> Mapping[str, str]:
        return self.options.environ if self.options.environ is not None else os.environ

    def launches(
        self, job: v1beta1.TrainingJob, pods: Collection[tuple[str, int]] | None = None
    ) -> list[plan.Launch]:
        """The launches of ``pods`` (every pod: None) of ``job`` as its status stands now."""
        # Replicas a scale-up added get addresses of their own; the others keep theirs.
        machine = machine_.addresses(job, self.fw, self.machine, free=self.options.free_ports)
        objects = render.render(job, self.fw, SCHEDULER, pods=pods, with_tensorboard=False, machine=machine)
        spelled = {k.lower(): k for k in job.spec.replica_specs}
        out: list[plan.Launch] = []
        refused: list[str] = []
        for pod in (o for o in objects if o["kind"] == "Pod"):
            try:
                out.append(
                    plan.launch(
                        pod,
                        objects,
                        self.fw,
                        root=self.root,
                        environ=self.environ,
                        cwd=self.options.cwd,
                        skip_extra=self.options.skip_extra,
                        spelled=spelled,
                    )
                )
            except plan.NotRunnableError as e:
                refused += e.lines
        if refused:
            raise plan.NotRunnableError(refused)
        return out


def prepare(job: v1beta1.TrainingJob, fw: fw_contract.Framework, options: Options | None = None) -> Prepared:
    """``job`` ready to run here; :class:`~.plan.NotRunnableError` with every reason it cannot."""
    options = options or Options()
    base = pathlib.Path(options.cwd) / (options.run_dir or RUN_DIR)
    machine = machine_.addresses(job, fw, free=options.free_ports)
    prepared = Prepared(job=job, fw=fw, machine=machine, root=plan.run_dir(base, job), options=options)
    problems: list[str] = []
    launches: list[plan.Launch] = []
    try:
        launches = prepared.launches(job)
    except plan.NotRunnableError as e:
        problems += e.lines
    problems += machine_.taken(machine, fw)
    if job.spec.run_policy.suspend:
        problems.append(
            "runPolicy.suspend: a suspended job runs no replica: set it false to run the job here"
        )
    manager = job.spec.manager
    if manager not in (None, naming.MANAGER_NAME):
        problems.append(
            f"managedBy: {manager} manages this job, not kubetrain: leave managedBy out to run it here"
        )
    if problems:
        raise plan.NotRunnableError(problems)
    warnings = [w for launch in launches for w in launch.warnings]
    policy = job.spec.run_policy.scheduling_policy
    if policy is not None and policy.queue:
        warnings.append(f"schedulingPolicy.queue {policy.queue}: no queue here; the replicas start at once")
    if job.spec.failure_policy.restart_method is v1beta1.RestartMethod.IN_PLACE:
        warnings.append("failurePolicy.restartMethod InPlace: restarts make the processes again, as Recreate")
    if job.spec.tensorboard is not None:
        warnings.append("spec.tensorboard: the TensorBoard is not started locally")
    return attrs.evolve(prepared, warnings=tuple(warnings))
