"""Kubeflow v1's kinds and MPIJob as their users wrote them, and what Kubeflow did with them.

Three things per kind, written from Kubeflow's sources (training-operator's
``pkg/apis/kubeflow.org/v1`` defaults and ``pkg/controller.v1/*`` env code, mpi-operator's
``v2beta1``) and ../shared/REFERENCE.md §2 — never from kubetrain's code:

- :func:`documents`: hypothesis strategies of valid documents of each kind, every key
  kubetrain reads in any of its spellings (``tfReplicaSpecs``, ``tf_replica_specs``,
  ``TF_REPLICA_SPECS``), replica types in any case, random counts, ports and templates;
- :func:`normalise`: a document as Kubeflow's defaulting left it, in one spelling — what
  writing a converted job back must give;
- :func:`kubeflow_env`: the env Kubeflow set in one replica's main container, and
  :func:`equivalent`, which says whether kubetrain's value for a variable means the same.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Any

import attrs
from hypothesis import strategies as st

from testkit import strategies

__all__ = [
    "KINDS",
    "Kind",
    "documents",
    "equivalent",
    "kind_of",
    "kubeflow_env",
    "main_container",
    "normalise",
    "pod_name",
]


@attrs.frozen(kw_only=True)
class Kind:
    kind: str
    api_version: str
    specs_field: str
    types: tuple[str, ...]
    container: str  # Kubeflow's default container name (and kubetrain's main container)
    port_name: str | None
    port: int
    restart_policy: str
    restart_policies: Mapping[str, str] = attrs.field(factory=dict)
    default_replicas: Mapping[str, int] = attrs.field(factory=dict)

    @property
    def key(self) -> str:
        return self.kind if self.kind != "MPIJob" else f"MPIJob/{self.api_version.rpartition('/')[2]}"


V1 = "kubeflow.org/v1"
KINDS: dict[str, Kind] = {
    k.key: k
    for k in (
        Kind(
            kind="TFJob",
            api_version=V1,
            specs_field="tfReplicaSpecs",
            types=("Chief", "Master", "Worker", "PS", "Evaluator"),
            container="tensorflow",
            port_name="tfjob-port",
            port=2222,
            restart_policy="Never",
        ),
        Kind(
            kind="PyTorchJob",
            api_version=V1,
            specs_field="pytorchReplicaSpecs",
            types=("Master", "Worker"),
            container="pytorch",
            port_name="pytorchjob-port",
            port=23456,
            restart_policy="OnFailure",
        ),
        Kind(
            kind="MXJob",
            api_version=V1,
            specs_field="mxReplicaSpecs",
            types=("Scheduler", "Server", "Worker"),
            container="mxnet",
            port_name="mxjob-port",
            port=9091,
            restart_policy="Never",
        ),
        Kind(
            kind="XGBoostJob",
            api_version=V1,
            specs_field="xgbReplicaSpecs",
            types=("Master", "Worker"),
            container="xgboost",
            port_name="xgboostjob-port",
            port=9999,
            restart_policy="Never",
        ),
        Kind(
            kind="PaddleJob",
            api_version=V1,
            specs_field="paddleReplicaSpecs",
            types=("Master", "Worker"),
            container="paddle",
            port_name="master",
            port=36543,
            restart_policy="OnFailure",
        ),
        Kind(
            kind="JAXJob",
            api_version=V1,
            specs_field="jaxReplicaSpecs",
            types=("Worker",),
            container="jax",
            port_name="jaxjob-port",
            port=6666,
            restart_policy="Never",
        ),
        Kind(
            kind="MPIJob",
            api_version=V1,
            specs_field="mpiReplicaSpecs",
            types=("Launcher", "Worker"),
            container="mpi",
            port_name=None,
            port=22,
            restart_policy="Never",
            default_replicas={"Worker": 0},
        ),
        Kind(
            kind="MPIJob",
            api_version="kubeflow.org/v2beta1",
            specs_field="mpiReplicaSpecs",
            types=("Launcher", "Worker"),
            container="mpi",
            port_name=None,
            port=22,
            restart_policy="Never",
            restart_policies={"Launcher": "OnFailure"},
            default_replicas={"Worker": 0},
        ),
    )
}

SSHD = ["/usr/sbin/sshd", "-De"]
RESTART_POLICIES = ["Always", "OnFailure", "Never", "ExitCode"]
# Every key of a Kubeflow spec that kubetrain reads (not pod template contents), camelCase.
KNOWN_KEYS = {
    k.lower(): k
    for k in [
        "replicas",
        "restartPolicy",
        "template",
        "runPolicy",
        "cleanPodPolicy",
        "ttlSecondsAfterFinished",
        "activeDeadlineSeconds",
        "backoffLimit",
        "suspend",
        "managedBy",
        "schedulingPolicy",
        "minAvailable",
        "queue",
        "priorityClass",
        "scheduleTimeoutSeconds",
        "minResources",
        "successPolicy",
        "enableDynamicWorker",
        "nprocPerNode",
        "elasticPolicy",
        "minReplicas",
        "maxReplicas",
        "rdzvBackend",
        "rdzvHost",
        "rdzvPort",
        "rdzvId",
        "rdzvConf",
        "key",
        "value",
        "standalone",
        "maxRestarts",
        "metrics",
        "jobMode",
        "slotsPerWorker",
        "mainContainer",
        "sshAuthMountPath",
        "launcherCreationPolicy",
        "mpiImplementation",
        "runLauncherAsWorker",
    ]
    + [k.specs_field for k in KINDS.values()]
}


def kind_of(doc: Mapping[str, Any]) -> Kind:
    if doc["kind"] == "MPIJob":
        return KINDS[f"MPIJob/{doc['apiVersion'].rpartition('/')[2]}"]
    return KINDS[doc["kind"]]


def snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def spellings(key: str) -> st.SearchStrategy[str]:
    return st.sampled_from([key, snake(key), snake(key).upper()])


@st.composite
def spelled(draw: st.DrawFn, data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with every key in one of its spellings (values untouched)."""
    return {draw(spellings(k)): v for k, v in data.items()}


# --- strategies -----------------------------------------------------------------------------


@st.composite
def _counts(draw: st.DrawFn, kind: Kind) -> dict[str, int]:
    """Replica counts kubetrain's framework accepts, per replica type present."""
    n = st.integers(min_value=0, max_value=4)
    one = st.integers(min_value=1, max_value=4)
    match kind.kind:
        case "TFJob":
            chief = draw(st.sampled_from(["Chief", "Master"]))
            optional = {"Worker": n, "PS": n, "Evaluator": st.integers(0, 1), chief: st.integers(0, 1)}
            counts = draw(
                st.fixed_dictionaries({}, optional=optional).filter(  # type: ignore[arg-type]
                    lambda c: any(c.get(t, 0) for t in ("Worker", "Chief", "Master"))
                )
            )
        case "PyTorchJob":
            counts = draw(st.fixed_dictionaries({"Worker": n}, optional={"Master": st.just(1)}))
            if not sum(counts.values()):
                counts["Worker"] = 1
        case "MXJob":
            local = {"Worker": st.just(1)}
            dist = {"Scheduler": st.just(1), "Server": one, "Worker": one}
            counts = draw(st.fixed_dictionaries(local) | st.fixed_dictionaries(dist))
        case "XGBoostJob":
            counts = draw(st.fixed_dictionaries({"Master": st.just(1)}, optional={"Worker": n}))
        case "PaddleJob":
            counts = draw(st.fixed_dictionaries({"Worker": one}, optional={"Master": one}))
        case "JAXJob":
            counts = draw(st.fixed_dictionaries({"Worker": one}))
        case _:
            counts = draw(st.fixed_dictionaries({"Launcher": st.just(1), "Worker": one}))
    return counts


@st.composite
def _template(draw: st.DrawFn, kind: Kind, base: Mapping[str, Any], port: int | None) -> dict[str, Any]:
    """``base`` (free-form JSON, drawn once per document: it is the costly part) with this
    replica type's own image, command and args."""
    template = copy.deepcopy(dict(base))
    main = template["spec"]["containers"][0]
    main["image"] = draw(strategies.dns_label)
    if draw(st.booleans()):
        main["command"] = draw(st.lists(strategies.dns_label, min_size=1, max_size=3))
    if draw(st.booleans()):
        main["args"] = draw(st.lists(st.text(max_size=6), max_size=3))
    if port is not None and kind.port_name is not None:
        main["ports"] = [{"name": kind.port_name, "containerPort": port}]
    return template


@st.composite
def _run_policy(draw: st.DrawFn) -> dict[str, Any]:
    fields = {
        "cleanPodPolicy": st.sampled_from(["All", "Running", "None"]),
        "ttlSecondsAfterFinished": st.integers(0, 10**6),
        "activeDeadlineSeconds": st.integers(1, 10**6),
        "backoffLimit": st.integers(0, 100),
        "suspend": st.just(True),
    }
    out = draw(st.fixed_dictionaries({}, optional=fields))
    scheduling = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "minAvailable": st.integers(1, 8),
                "queue": strategies.dns_label,
                "priorityClass": strategies.dns_label,
                "scheduleTimeoutSeconds": st.integers(1, 10**4),
            },
        )
    )
    if scheduling:
        out["schedulingPolicy"] = draw(spelled(scheduling))
    return out


@st.composite
def documents(draw: st.DrawFn, key: str) -> dict[str, Any]:
    """A valid document of kind ``key`` (a key of :data:`KINDS`) as a user could write it."""
    kind = KINDS[key]
    counts = draw(_counts(kind))
    # One port per job: Kubeflow read each type's own, but rank 0's is the one that matters.
    port = draw(st.none() | st.integers(1024, 65000)) if kind.port_name else None
    base = draw(strategies.pod_templates(container_name=kind.container))
    specs: dict[str, Any] = {}
    for t, n in counts.items():
        rs: dict[str, Any] = {"template": draw(_template(kind, base, port))}
        if n != kind.default_replicas.get(t, 1) or draw(st.booleans()):
            rs["replicas"] = n
        if draw(st.booleans()):
            rs["restartPolicy"] = draw(st.sampled_from(RESTART_POLICIES))
        type_key = draw(st.sampled_from([t, t.lower(), t.upper()]))
        specs[type_key] = draw(spelled(rs))
    spec: dict[str, Any] = {kind.specs_field: specs}
    run_policy = draw(_run_policy())
    if run_policy:
        spec["runPolicy"] = draw(spelled(run_policy))
    spec.update(draw(_extra(kind, counts, port)))
    metadata: dict[str, Any] = {"name": draw(strategies.word(strategies.LOWER, strategies.LOWER, 12))}
    if draw(st.booleans()):
        metadata["namespace"] = draw(strategies.dns_label)
    return {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": metadata,
        "spec": draw(spelled(spec)),
    }


@st.composite
def _extra(draw: st.DrawFn, kind: Kind, counts: Mapping[str, int], port: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    match kind.kind:
        case "TFJob":
            if "Worker" in counts and not {"Chief", "Master"} & set(counts) and draw(st.booleans()):
                out["successPolicy"] = "AllWorkers"
        case "PyTorchJob":
            if draw(st.booleans()):
                out["nprocPerNode"] = draw(st.sampled_from(["auto", "cpu", "gpu", "1", "2", "8"]))
            if set(counts) == {"Worker"} and counts["Worker"] > 0 and draw(st.booleans()):
                out["elasticPolicy"] = draw(_elastic(counts["Worker"]))
        case "MXJob":
            if draw(st.booleans()):
                out["jobMode"] = "MXTrain"
        case "MPIJob":
            if draw(st.booleans()):
                out["slotsPerWorker"] = draw(st.integers(1, 8))
            if kind.api_version.endswith("v2beta1"):
                if draw(st.booleans()):
                    out["mpiImplementation"] = draw(st.sampled_from(["OpenMPI", "Intel", "MPICH"]))
                if draw(st.booleans()):
                    out["launcherCreationPolicy"] = "WaitForWorkersReady"
    return out


@st.composite
def _elastic(draw: st.DrawFn, workers: int) -> dict[str, Any]:
    # Kubeflow's defaults fill a missing bound from the other, and both from the Workers.
    policy: dict[str, Any] = draw(
        st.sampled_from([{"minReplicas": workers}, {"maxReplicas": workers}, {}])
        | st.fixed_dictionaries(
            {"minReplicas": st.integers(1, workers), "maxReplicas": st.integers(workers, 8)}
        )
    )
    optional = {
        "rdzvBackend": st.sampled_from(["c10d", "etcd", "etcd-v2"]),
        "rdzvId": strategies.dns_label,
        "maxRestarts": st.integers(0, 50),
        "rdzvHost": strategies.dns_label.map(lambda h: f"rdzv-{h}"),
        "rdzvPort": st.integers(1024, 65000),
        "rdzvConf": st.lists(
            st.fixed_dictionaries({"key": strategies.dns_label, "value": strategies.dns_label}),
            min_size=1,  # Kubeflow's env code panics on an empty list
            max_size=3,
            unique_by=lambda kv: kv["key"],
        ),
    }
    policy = {**policy, **draw(st.fixed_dictionaries({}, optional=optional))}
    if "rdzvConf" in policy:
        policy["rdzvConf"] = [draw(spelled(kv)) for kv in policy["rdzvConf"]]
    return dict(draw(spelled(policy)))


# --- what Kubeflow made of a document ---------------------------------------------------------


def _canonical(data: Any) -> Any:
    """Known keys in camelCase, recursively, stopping at pod templates."""
    if isinstance(data, list):
        return [_canonical(v) for v in data]
    if not isinstance(data, Mapping):
        return data
    out = {}
    for k, v in data.items():
        name = KNOWN_KEYS.get(re.sub(r"[^0-9a-z]", "", k.lower()), k)
        out[name] = v if name == "template" else _canonical(v)
    return out


def normalise(doc: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` as Kubeflow's defaulting left it, every key in one spelling."""
    kind = kind_of(doc)
    out = copy.deepcopy(dict(doc))
    spec = out["spec"] = _canonical(out["spec"])
    specs = {}
    for key, rs in spec[kind.specs_field].items():
        t = next(t for t in kind.types if t.lower() == key.lower())
        rs.setdefault("replicas", kind.default_replicas.get(t, 1))
        rs.setdefault("restartPolicy", kind.restart_policies.get(t, kind.restart_policy))
        specs[t] = rs
    spec[kind.specs_field] = {t: specs[t] for t in kind.types if t in specs}
    run_policy = spec.setdefault("runPolicy", {})
    if not run_policy:
        del spec["runPolicy"]
    match kind.kind:
        case "PyTorchJob":
            spec.setdefault("nprocPerNode", "auto")
            elastic = spec.get("elasticPolicy")
            if elastic is not None:
                workers = specs["Worker"]["replicas"]
                low, high = elastic.get("minReplicas"), elastic.get("maxReplicas")
                elastic["minReplicas"] = low or high or workers
                elastic["maxReplicas"] = high or low or workers
                elastic.setdefault("rdzvBackend", "c10d")
                if "rdzvHost" in elastic or "rdzvPort" in elastic:
                    elastic.setdefault("rdzvHost", f"{out['metadata']['name']}-worker-0")
                    elastic.setdefault("rdzvPort", _port(kind, specs["Worker"]))
        case "MXJob":
            spec.setdefault("jobMode", "MXTrain")
        case "MPIJob":
            spec.setdefault("slotsPerWorker", 1)
            if kind.api_version.endswith("v2beta1"):
                spec.setdefault("mpiImplementation", "OpenMPI")
                spec["launcherCreationPolicy"] = "WaitForWorkersReady"  # what kubetrain does
                first = specs["Worker"]["template"]["spec"]["containers"][0]
                if not first.get("command") and not first.get("args"):
                    first["command"] = list(SSHD)
    return out


def main_container(template: Mapping[str, Any], name: str) -> dict[str, Any]:
    containers: list[dict[str, Any]] = template["spec"]["containers"]
    return next((c for c in containers if c.get("name") == name), containers[0])


def _port(kind: Kind, rs: Mapping[str, Any]) -> int:
    ports = main_container(rs["template"], kind.container).get("ports") or []
    return next((int(p["containerPort"]) for p in ports if p.get("name") == kind.port_name), kind.port)


def pod_name(doc: Mapping[str, Any], replica_type: str, index: int) -> str:
    """Kubeflow's pod name; kubetrain names the launcher ``{job}-launcher-0`` as every replica."""
    return f"{doc['metadata']['name']}-{replica_type.lower()}-{index}"


def kubeflow_env(doc: Mapping[str, Any], replica_type: str, index: int) -> dict[str, str]:
    """The env Kubeflow v1 set in the main container of one replica of normalised ``doc``."""
    kind = kind_of(doc)
    spec = doc["spec"]
    specs = spec[kind.specs_field]
    name = doc["metadata"]["name"]
    ns = doc["metadata"].get("namespace", "default")
    counts = {t: int(rs["replicas"]) for t, rs in specs.items()}
    total = sum(counts.values())
    port = {t: _port(kind, rs) for t, rs in specs.items()}

    def host(t: str, i: int) -> str:
        return f"{name}-{t.lower()}-{i}"

    env: dict[str, str] = {}
    match kind.kind:
        case "TFJob":
            if total != 1:  # "Do not set TF_CONFIG for local training jobs"
                cluster = {
                    t.lower(): [f"{host(t, i)}.{ns}.svc:{port[t]}" for i in range(n)]
                    for t, n in counts.items()
                }
                task = {"type": replica_type.lower(), "index": index}
                env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": task, "environment": "cloud"})
        case "PyTorchJob":
            nproc = spec["nprocPerNode"]
            env["PYTHONUNBUFFERED"] = "1"
            env["PET_NPROC_PER_NODE"] = nproc
            if "Master" in specs:
                rank = index + (1 if replica_type == "Worker" else 0)
                env |= {
                    "MASTER_PORT": str(port["Master"]),
                    "MASTER_ADDR": host("Master", 0),
                    "PET_MASTER_PORT": str(port["Master"]),
                    "PET_MASTER_ADDR": host("Master", 0),
                    "WORLD_SIZE": str(total * (int(nproc) if nproc.isdigit() else 1)),
                    "RANK": str(rank),
                    "PET_NODE_RANK": str(rank),
                }
            elastic = spec.get("elasticPolicy")
            if elastic is None:
                env["PET_NNODES"] = str(total)
            else:
                rdzv_host = elastic.get("rdzvHost", host("Worker", 0))
                env["PET_RDZV_ENDPOINT"] = f"{rdzv_host}:{elastic.get('rdzvPort', port['Worker'])}"
                env["PET_RDZV_BACKEND"] = elastic["rdzvBackend"]
                env["PET_NNODES"] = f"{elastic['minReplicas']}:{elastic['maxReplicas']}"
                for key, var in (("maxRestarts", "PET_MAX_RESTARTS"), ("rdzvId", "PET_RDZV_ID")):
                    if key in elastic:
                        env[var] = str(elastic[key])
                if elastic.get("rdzvConf"):
                    env["PET_RDZV_CONF"] = ",".join(
                        f"{kv['key']}={kv['value']}" for kv in elastic["rdzvConf"]
                    )
        case "MXJob":
            cluster = {
                t.lower(): [{"url": host(t, i), "port": port[t]} for i in range(n)] for t, n in counts.items()
            }
            labels = {t.lower(): "" for t in specs}
            task = {"type": replica_type.lower(), "index": index}
            scheduler = cluster.get("scheduler") or [{"url": "", "port": 0}]
            env |= {
                "MX_CONFIG": json.dumps({"cluster": cluster, "labels": labels, "task": task}),
                "DMLC_PS_ROOT_PORT": str(scheduler[0]["port"]),
                "DMLC_PS_ROOT_URI": str(scheduler[0]["url"]),
                "DMLC_NUM_SERVER": str(counts.get("Server", 0)),
                "DMLC_NUM_WORKER": str(counts.get("Worker", 0)),
                "DMLC_ROLE": replica_type.lower(),
                "DMLC_USE_KUBERNETES": "1",
            }
            if replica_type == "Worker":
                env["DMLC_WORKER_ID"] = str(index)
        case "XGBoostJob":
            env |= {
                "MASTER_PORT": str(port["Master"]),
                "MASTER_ADDR": host("Master", 0),
                "WORLD_SIZE": str(total),
                "RANK": str(index + (counts["Master"] if replica_type == "Worker" else 0)),
                "PYTHONUNBUFFERED": "0",
            }
            if total > 1:
                env["WORKER_PORT"] = str(port["Worker"])
                env["WORKER_ADDRS"] = ",".join(host("Worker", i) for i in range(total - 1))
        case "PaddleJob":
            env |= {"PYTHONUNBUFFERED": "1", "PADDLE_JOB_ID": name, "PADDLE_NNODES": str(total)}
            rendezvous = "Master" if "Master" in specs else "Worker"
            if replica_type == rendezvous and index == 0:
                env["POD_IP_DUMMY"] = "$(status.podIP)"
                env["PADDLE_MASTER"] = f"$(POD_IP_DUMMY):{port[rendezvous]}"
            else:
                env["PADDLE_MASTER"] = f"{host(rendezvous, 0)}:{port[rendezvous]}"
            if rendezvous == "Master":
                env["PADDLE_SERVER_NUM" if replica_type == "Master" else "PADDLE_TRAINER_NUM"] = "1"
        case "JAXJob":
            env |= {
                "PYTHONUNBUFFERED": "1",
                "COORDINATOR_PORT": str(port["Worker"]),
                "COORDINATOR_ADDRESS": host("Worker", 0),
                "NUM_PROCESSES": str(total),
                "PROCESS_ID": str(index),
            }
        case "MPIJob" if kind.api_version == V1:
            if replica_type == "Launcher":
                env |= {
                    "OMPI_MCA_plm_rsh_agent": "/etc/mpi/kubexec.sh",
                    "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
                    "NVIDIA_VISIBLE_DEVICES": "",
                    "NVIDIA_DRIVER_CAPABILITIES": "",
                }
        case "MPIJob":
            env["K_MPI_JOB_ROLE"] = replica_type.lower()
            if replica_type == "Launcher":
                slots = str(spec["slotsPerWorker"])
                retry = "-o ConnectionAttempts=10"
                env |= {
                    "OpenMPI": {
                        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
                        "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
                        "OMPI_MCA_plm_rsh_args": retry,
                        "OMPI_MCA_orte_set_default_slots": slots,
                    },
                    "Intel": {
                        "I_MPI_HYDRA_HOST_FILE": "/etc/mpi/hostfile",
                        "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": retry,
                        "I_MPI_PERHOST": slots,
                    },
                    "MPICH": {"HYDRA_HOST_FILE": "/etc/mpi/hostfile", "HYDRA_LAUNCH_EXTRA_ARGS": retry},
                }[spec["mpiImplementation"]]
                if not spec.get("runLauncherAsWorker"):
                    env |= {"NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""}
    return env


def _short(value: str, ns: str) -> str:
    return value.replace(f".{ns}.svc", "")


def _cluster(cluster: Mapping[str, list[Any]], ns: str) -> dict[str, Any]:
    """A TF_CONFIG or MX_CONFIG cluster with short host names, empty types left out, and the
    differences kubetrain makes on purpose (and notes): a TF master is the chief, and the
    evaluator is not a member."""
    out: dict[str, Any] = {}
    for t, members in cluster.items():
        if not members or t == "evaluator":
            continue
        out["chief" if t == "master" else t] = json.loads(_short(json.dumps(members), ns))
    return out


def equivalent(name: str, kubeflow: str, ours: str, ns: str) -> bool:
    """Whether kubetrain's value of variable ``name`` means what Kubeflow's did."""
    kubeflow, ours = _short(kubeflow, ns), _short(ours, ns)
    if name == "PYTHONUNBUFFERED":
        return bool(kubeflow) and bool(ours)  # any non-empty value turns buffering off
    if name in ("TF_CONFIG", "MX_CONFIG"):
        theirs, mine = json.loads(kubeflow), json.loads(ours)
        task = dict(
            theirs["task"], type="chief" if theirs["task"]["type"] == "master" else theirs["task"]["type"]
        )
        return bool(_cluster(theirs["cluster"], ns) == _cluster(mine["cluster"], ns) and task == mine["task"])
    if name == "PET_RDZV_CONF":
        return set(kubeflow.split(",")) == set(ours.split(","))
    if name == "PADDLE_MASTER":
        return kubeflow.replace("$(POD_IP_DUMMY)", "127.0.0.1") == ours
    return kubeflow == ours
