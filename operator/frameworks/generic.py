"""Generic: any replica types, for programs that bring their own wiring.

Replica types are free (``replica_types`` is empty, so any key of ``replicaSpecs`` is
accepted). The main container is the one named ``main``, else the only container. It
gets where it stands in the job, and nothing framework-specific:

- ``KUBETRAIN_REPLICA_TYPE``: its replica type, as the job spells it;
- ``KUBETRAIN_REPLICA_INDEX``: its index within that type;
- ``KUBETRAIN_RANK``: its position among every replica of the job, types sorted by name
  (as written, so ``Alpha`` before ``Beta`` and upper case before lower case), then by
  index;
- ``KUBETRAIN_WORLD_SIZE``: every replica of the job.

No host list is injected (it grows with the job, and a pod's env is limited): every
replica has a headless Service and resolves as ``{job}-{lower(type)}-{index}.{namespace}.svc``
on port 2222 (``generic-port``) unless its replica spec sets ``port``.

Success: every replica of every type succeeds (types with 0 replicas are left out; a job
needs at least one replica). Restarts: ``ExitCode`` with scope ``Job``.
Nothing is known about the program, and restarting everything is the one choice that is
safe for a collective one (a restarted member of a gang cannot rejoin a running one);
independent replicas can choose ``failurePolicy.restartScope: Pod``. A user bug (exit
code 1-127) fails the job at once, a signal or eviction restarts it.
"""

from collections.abc import Iterator, Mapping

from kubetrain.api import v1beta1, validation
from kubetrain.operator.frameworks import framework

__all__ = ["FRAMEWORK"]


def _env(world: framework.World, replica: framework.Replica) -> Mapping[str, str]:
    return {
        "KUBETRAIN_REPLICA_TYPE": replica.type,
        "KUBETRAIN_REPLICA_INDEX": str(replica.index),
        "KUBETRAIN_RANK": str(world.replicas.index(replica)),
        "KUBETRAIN_WORLD_SIZE": str(len(world.replicas)),
    }


def _success(spec: v1beta1.TrainingJobSpec) -> v1beta1.SuccessPolicy:
    # A type with no replicas has nothing to succeed; validation guarantees one that has.
    types = sorted(k for k, s in spec.replica_specs.items() if s.replicas > 0) or sorted(spec.replica_specs)
    return v1beta1.SuccessPolicy(targets=tuple(v1beta1.SuccessTarget(replica_type=k) for k in types))


def _rules(job: v1beta1.TrainingJob) -> Iterator[validation.FieldError]:
    if not any(s.replicas > 0 for s in job.spec.replica_specs.values()):
        yield validation.FieldError(path=("spec", "replicaSpecs"), message="generic needs at least 1 replica")


FRAMEWORK = framework.Framework(
    name="generic",
    replica_types=(),
    container="main",
    port=2222,
    port_name="generic-port",
    restart_policy=v1beta1.RestartPolicy.EXIT_CODE,
    # The safe default for an unknown program: a gang restarts together.
    restart_scope=v1beta1.RestartScope.JOB,
    success=_success,
    env=_env,
    extra_rules=_rules,
)
