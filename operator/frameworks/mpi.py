"""MPI: a launcher runs ``mpirun`` and reaches the workers over ssh (Horovod, DeepSpeed, ChainerMN).

Two frameworks share one implementation:

- ``mpi`` (:data:`FRAMEWORK`), as in the MPI Operator: exactly one ``Launcher`` and one
  or more ``Worker``. The launcher runs ``mpirun`` (``horovodrun``, ``deepspeed``) and
  hosts no rank; the workers run ``sshd`` in the foreground and host every rank.
- ``chainer`` (:data:`CHAINER`), as ChainerJob for ChainerMN: exactly one ``Master`` and
  any number of worker *sets* — heterogeneous groups, one replica type each, whose names
  start with ``Worker`` (``Worker``, ``WorkerGpu``, ``WorkerCpu`` ...). The master runs
  ``mpiexec`` and hosts ranks too, as it did in ChainerJob.

Files, in the job's ConfigMap at ``/etc/kubetrain``:

- ``hostfile``: one line per host that runs ranks — for ``chainer`` the master first (so
  rank 0, which ChainerMN uses for logs and snapshots, runs where ``mpiexec`` runs and
  where the job's success is decided), then every worker in order. The host is the
  replica's Service name, ``{job}-{type}-{index}.{namespace}.svc``; ``N`` is its slots::

      tj-worker-0.ns.svc slots=2        # OpenMPI
      tj-worker-0.ns.svc:2              # Intel MPI and MPICH

- ``discover_hosts.sh``: prints the same hosts as ``host:N`` lines, for
  ``horovodrun --host-discovery-script``. The ConfigMap is mounted without the execute
  bit, so call it through ``sh`` or copy it first.

Slots per host: ``framework.options.slotsPerWorker`` if set, else the GPUs the host's
main container requests, else 1.

Env of the main container (``mpi`` / ``chainer``, else the only container):

- every replica: ``K_MPI_JOB_ROLE`` = ``launcher`` (the Launcher, the Master) or
  ``worker`` — the name the MPI Operator's images switch on;
- the launcher, for OpenMPI (the default): ``OMPI_MCA_orte_default_hostfile`` (the
  hostfile), ``OMPI_MCA_plm_rsh_agent=ssh``, ``OMPI_MCA_orte_keep_fqdn_hostnames=true``
  (workers are reached by their Service names, which must not be cut to the first label),
  ``OMPI_MCA_btl_tcp_if_exclude=lo,docker0``, ``OMPI_MCA_odls_base_sigkill_timeout=0`` (a
  failed world's other ranks are killed at once, not a second after SIGTERM on each Worker);
  for Intel MPI ``I_MPI_HYDRA_HOST_FILE``;
  for MPICH ``HYDRA_HOST_FILE``. These are Open MPI 4 (ORTE) names; Open MPI 5 reads
  ``PRTE_MCA_*`` instead, so pass ``--hostfile`` there;
- a launcher that requests no GPU: ``NVIDIA_VISIBLE_DEVICES`` and
  ``NVIDIA_DRIVER_CAPABILITIES`` empty, as Kubeflow's MPIJob sets them, so that an image
  whose own env says ``all`` (CUDA images do) is not handed the node's GPUs by the NVIDIA
  runtime, which other pods asked for.

Workers get no rank, size or address: ``mpirun`` starts their processes over ssh and
hands each its rank itself.

ssh: every job gets its own Ed25519 key pair in a Secret ``{job}-ssh``, mounted read-only
(mode 0600) at ``/root/.ssh`` in every pod: ``id_ed25519``, ``id_ed25519.pub``,
``authorized_keys`` (the same public key) and ``config``, which turns off host-key
checks — host keys belong to images, not jobs, and the mounted directory cannot take a
``known_hosts`` — retries connections while a worker's sshd starts, and names the port
of every replica whose ``port`` is not 22. The key is random, so the reconciler creates
the Secret only when it is missing and never updates it. ssh and sshd run as root; the
image needs ``openssh-server``, and sshd may need ``StrictModes no`` (the MPI Operator's
images set it) because the mounted files are links into the Secret's volume.

Lifecycle: the launcher is created only once every worker pod is Ready, so ``mpirun``
never races ``sshd`` (a ``tcpSocket`` readiness probe on port 22 makes Ready mean
listening); chainer's master waits for every worker set (``start_after`` takes the
pattern ``Worker*``). The launcher (the master) alone decides success. One MPI world cannot lose
a rank and carry on, nor take a replacement into a running ``MPI_COMM_WORLD``: any
restart starts a new world. Restarted in place, a failed launcher restarts alone
(``rank_launcher``): its ``mpirun`` stopped every rank as it ended, and the workers' ``sshd``
serve the next one. The restart policy is ``ExitCode``: an error in
training code (exit codes 1-127, which ``mpirun`` passes on) fails the job at once
instead of spending the retry budget, while a process killed by a signal (128-255)
restarts the world; lost and preempted pods are infrastructure failures and restart it
regardless.

Options (``framework.options``): ``mpiImplementation`` — ``OpenMPI`` (default),
``Intel`` or ``MPICH``; ``slotsPerWorker`` — a positive integer. Any other key is an
error, so a misspelt option never passes unnoticed.
"""

import functools
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from kubetrain.api import v1beta1, validation
from kubetrain.operator.frameworks import framework

__all__ = [
    "CHAINER",
    "FRAMEWORK",
    "HOSTFILE",
    "IMPLEMENTATIONS",
    "implementation",
    "slots",
    "ssh_files",
]

OPENMPI, INTEL, MPICH = "OpenMPI", "Intel", "MPICH"
IMPLEMENTATIONS = (OPENMPI, INTEL, MPICH)
IMPLEMENTATION_OPTION = "mpiImplementation"
SLOTS_OPTION = "slotsPerWorker"
HOSTFILE = f"{framework.CONFIG_MOUNT}/hostfile"
ROLE = "K_MPI_JOB_ROLE"
SSH_PORT = 22

_LAUNCHER_ENV: Mapping[str, Mapping[str, str]] = {
    OPENMPI: {
        "OMPI_MCA_orte_default_hostfile": HOSTFILE,
        "OMPI_MCA_plm_rsh_agent": "ssh",
        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
        "OMPI_MCA_btl_tcp_if_exclude": "lo,docker0",
        # When a rank fails, Open MPI's daemon on each Worker SIGTERMs the other ranks and waits
        # a second before SIGKILL, for a world that is already broken; every restart waited for
        # it (docs/performance.md). mpirun passes the value on to the daemons it starts.
        "OMPI_MCA_odls_base_sigkill_timeout": "0",
    },
    INTEL: {"I_MPI_HYDRA_HOST_FILE": HOSTFILE},
    MPICH: {"HYDRA_HOST_FILE": HOSTFILE},
}

# Empty, the NVIDIA container runtime hands a container no GPU, whatever its image's env says.
_NO_GPUS: Mapping[str, str] = {"NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""}

# Host keys belong to the image, and a read-only ~/.ssh cannot learn them: do not check
# them. ConnectionAttempts (one a second) bridges a worker whose sshd is still starting.
_SSH_CONFIG = """\
Host *
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    LogLevel ERROR
    ConnectionAttempts 10
"""


@attrs.frozen(kw_only=True)
class _Flavour:
    """What tells ``mpi`` and ``chainer`` apart."""

    name: str
    launcher: str  # the replica type that runs mpirun
    workers: framework.ReplicaType
    container: str
    launcher_hosts_ranks: bool


_MPI = _Flavour(
    name="mpi",
    launcher="Launcher",
    workers=framework.ReplicaType(name="Worker", min_replicas=1),
    container="mpi",
    launcher_hosts_ranks=False,
)
# ChainerJob's worker sets are named by the user: WorkerGpu, WorkerCpu, ...
_CHAINER = _Flavour(
    name="chainer",
    launcher="Master",
    workers=framework.ReplicaType(name="Worker*"),
    container="chainer",
    launcher_hosts_ranks=True,
)


def _options(job: v1beta1.TrainingJob) -> Mapping[str, Any]:
    return job.spec.framework.options or {}


def _positive_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, str) and value.isascii() and value.isdigit() and int(value) > 0:
        return int(value)
    return None


def implementation(job: v1beta1.TrainingJob) -> str:
    """``OpenMPI``, ``Intel`` or ``MPICH``, from ``framework.options.mpiImplementation``."""
    return str(_options(job).get(IMPLEMENTATION_OPTION, OPENMPI))


def slots(world: framework.World, replica: framework.Replica, container: str) -> int:
    """Ranks one host takes: ``slotsPerWorker``, else the GPUs it requests, else 1."""
    option = _positive_int(_options(world.job).get(SLOTS_OPTION))
    if option is not None:
        return option
    main = framework.main_container(replica.spec.template, container) or {}
    return framework.gpus_requested(main) or 1


def _hosts(flavour: _Flavour, world: framework.World) -> list[tuple[str, int]]:
    """Each host that runs ranks, once, with its slots: replicas that share a host (every one of a
    local run's, on this machine) are one line with their slots added, as Open MPI refuses a
    host listed twice with slots."""
    ranked = [r for r in world.replicas if flavour.workers.matches(r.type)]
    if flavour.launcher_hosts_ranks:
        ranked = [*world.of_type(flavour.launcher), *ranked]
    hosts: dict[str, int] = {}
    for r in ranked:
        hosts[r.host] = hosts.get(r.host, 0) + slots(world, r, flavour.container)
    return list(hosts.items())


def _hostfile(flavour: _Flavour, world: framework.World) -> str:
    hosts = _hosts(flavour, world)
    if implementation(world.job) == OPENMPI:
        return "".join(f"{host} slots={n}\n" for host, n in hosts)
    return "".join(f"{host}:{n}\n" for host, n in hosts)


def _discover_hosts(flavour: _Flavour, world: framework.World) -> str:
    return "#!/bin/sh\n" + "".join(f"echo {host}:{n}\n" for host, n in _hosts(flavour, world))


def _files(flavour: _Flavour, world: framework.World) -> Mapping[str, str]:
    return {"hostfile": _hostfile(flavour, world), "discover_hosts.sh": _discover_hosts(flavour, world)}


def _env(flavour: _Flavour, world: framework.World, replica: framework.Replica) -> Mapping[str, str]:
    if replica.type.lower() != flavour.launcher.lower():
        return {ROLE: "worker"}
    env = {ROLE: "launcher", **_LAUNCHER_ENV[implementation(world.job)]}
    main = framework.main_container(replica.spec.template, flavour.container) or {}
    if not framework.gpus_requested(main):
        env.update(_NO_GPUS)
    return env


def ssh_files(world: framework.World) -> Mapping[str, str]:
    """A fresh key pair, trusted by itself, and the ssh client's config."""
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode("ascii")
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    line = f"{public.decode('ascii')} kubetrain/{world.namespace}/{world.name}\n"
    ports = "".join(f"Host {r.host}\n    Port {r.port}\n" for r in world.replicas if r.port != SSH_PORT)
    return {
        "id_ed25519": private,
        "id_ed25519.pub": line,
        "authorized_keys": line,
        # ssh takes the first value it reads for each setting: specific hosts come first.
        "config": ports + _SSH_CONFIG,
    }


def _option_errors(flavour: _Flavour, job: v1beta1.TrainingJob) -> Iterator[validation.FieldError]:
    path = ("spec", "framework", "options")
    options = _options(job)
    known = (IMPLEMENTATION_OPTION, SLOTS_OPTION)
    for key in options:
        if key not in known:
            yield validation.FieldError(
                path=(*path, key), message=f"{flavour.name} has no option {key} (known: {', '.join(known)})"
            )
    if IMPLEMENTATION_OPTION in options and options[IMPLEMENTATION_OPTION] not in IMPLEMENTATIONS:
        yield validation.FieldError(
            path=(*path, IMPLEMENTATION_OPTION),
            message=f"must be one of {', '.join(IMPLEMENTATIONS)}, not {options[IMPLEMENTATION_OPTION]!r}",
        )
    if SLOTS_OPTION in options and _positive_int(options[SLOTS_OPTION]) is None:
        yield validation.FieldError(
            path=(*path, SLOTS_OPTION), message=f"must be a positive integer, not {options[SLOTS_OPTION]!r}"
        )


def _framework(flavour: _Flavour) -> framework.Framework:
    return framework.Framework(
        name=flavour.name,
        replica_types=(
            framework.ReplicaType(name=flavour.launcher, min_replicas=1, max_replicas=1, master=True),
            flavour.workers,
        ),
        container=flavour.container,
        port=SSH_PORT,
        port_name="ssh",
        restart_policy=v1beta1.RestartPolicy.EXIT_CODE,
        restart_scope=v1beta1.RestartScope.JOB,
        success=framework.first(flavour.launcher),
        progress_from=flavour.workers.name,
        env=functools.partial(_env, flavour),
        files=functools.partial(_files, flavour),
        extra_rules=functools.partial(_option_errors, flavour),
        start_after={flavour.launcher: (flavour.workers.name,)},
        rank_launcher=flavour.launcher,
        secret=ssh_files,
    )


FRAMEWORK = _framework(_MPI)
CHAINER = _framework(_CHAINER)
