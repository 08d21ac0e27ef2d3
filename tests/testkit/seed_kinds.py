"""Generated documents of the first operators' kinds, and what their operators ran for them.

Each strategy draws one job and returns a :class:`Case`:

- ``spelled``: the document as a user may have written it — every field the operator
  defined in one of the spellings their documentation used (``replicaSpecs``,
  ``replica_specs``, ``REPLICA_SPECS``, ``ReplicaSpecs``), defaults left out or spelled out,
  replicas in any order, a template restart policy, an exported ``status``;
- ``canonical``: the same job as ``kubetrain convert --to`` writes it back — one spelling,
  the old operator's defaults filled in, replicas in the framework's order — so a round trip
  must give exactly it;
- ``hosts``: what the old operator ran, replica by replica (its type, index, port, main
  container and MPI slots), for checking the pods and env a converted job renders against
  the old env contract, computed from the old operators' documented behaviour alone.

Only valid jobs are drawn: a failure of a property over them is a converter's bug.
"""

from __future__ import annotations

import copy
import re
import string
from typing import Any

import attrs
from hypothesis import strategies as st

from testkit import strategies

__all__ = [
    "Case",
    "Host",
    "caffe2_jobs",
    "chainer_jobs",
    "env",
    "main_container",
    "mx_jobs",
    "pods",
    "respell",
    "tf_jobs",
]

DIGITS = string.digits


@attrs.frozen(kw_only=True)
class Host:
    """One replica as the old operator ran it."""

    type: str  # the old kind's spelling: MASTER, SCHEDULER, WORKER, a worker set's name ...
    index: int
    port: int | None
    container: dict[str, Any]  # its main container, as written
    slots: int | None = None  # MPI slots (ChainerJob)


@attrs.frozen(kw_only=True)
class Case:
    api_version: str
    kind: str
    spelled: dict[str, Any]
    canonical: dict[str, Any]
    hosts: tuple[Host, ...]

    def of_type(self, old_type: str) -> list[Host]:
        return [h for h in self.hosts if h.type == old_type]


# --- spellings ----------------------------------------------------------------------------

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")


def respell(key: str, style: int) -> str:
    """``tfReplicaType`` as written (0), ``tf_replica_type`` (1), ``TF_REPLICA_TYPE`` (2) or ``TfReplicaType`` (3)."""
    words = _WORDS.findall(key)
    if style == 1:
        return "_".join(w.lower() for w in words)
    if style == 2:
        return "_".join(w.upper() for w in words)
    if style == 3:
        return key[:1].upper() + key[1:]
    return key


class _Speller:
    """Spells each field of one document in its own, drawn, style."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw

    def __call__(self, key: str) -> str:
        return respell(key, self.draw(st.sampled_from((0, 0, 1, 2, 3))))

    def maybe(self) -> bool:
        """Whether to spell out a field that holds its default (or add an optional extra)."""
        return bool(self.draw(st.booleans()))


# --- shared pieces ------------------------------------------------------------------------

job_names = strategies.word(string.ascii_lowercase, string.ascii_lowercase + DIGITS, 10)
images = st.sampled_from(["python:3.11", "registry.example.com/train:1", "tensorflow/tensorflow:1.15.5"])
words = st.text(alphabet=string.ascii_letters + DIGITS + "-_=./", min_size=1, max_size=8)


@st.composite
def containers(draw: st.DrawFn, name: str, gpus: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": draw(images)}
    if draw(st.booleans()):
        out["command"] = draw(st.lists(words, min_size=1, max_size=3))
    if draw(st.booleans()):
        out["args"] = draw(st.lists(words, max_size=3))
    if draw(st.booleans()):
        # The user's own variables, clear of every name an operator sets.
        out["env"] = [
            {"name": f"USER_{n}", "value": v}
            for n, v in draw(st.dictionaries(st.sampled_from("ABC"), words, min_size=1, max_size=2)).items()
        ]
    if gpus and draw(st.booleans()):
        out["resources"] = {"limits": {"nvidia.com/gpu": draw(st.integers(1, 4))}}
    return out


@st.composite
def templates(draw: st.DrawFn, main: str, gpus: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [draw(containers(main, gpus))]}
    if draw(st.booleans()):
        spec["containers"].append({"name": "sidecar", "image": "busybox:1.36", "command": ["sleep", "inf"]})
    if draw(st.booleans()):
        spec["nodeSelector"] = {"pool": draw(st.sampled_from(["gpu", "cpu"]))}
    out: dict[str, Any] = {"spec": spec}
    if draw(st.booleans()):
        out["metadata"] = {"labels": {"team": draw(job_names)}}
    return out


def _with_restart_policy(
    draw: st.DrawFn, template: dict[str, Any], policies: tuple[str, ...]
) -> dict[str, Any]:
    """The template as written: maybe with a restart policy, which no TrainingJob keeps."""
    out = copy.deepcopy(template)
    if draw(st.booleans()):
        out["spec"]["restartPolicy"] = draw(st.sampled_from(policies))
    return out


def _metadata(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {"name": draw(job_names)}
    if draw(st.booleans()):
        out["namespace"] = draw(st.sampled_from(["default", "ml"]))
    if draw(st.booleans()):
        out["labels"] = {"app": draw(job_names)}
    return out


def _spelled_metadata(draw: st.DrawFn, meta: dict[str, Any]) -> dict[str, Any]:
    out = dict(meta)
    if draw(st.booleans()):
        out.update(uid="6f2c1e0a-0000-4000-8000-000000000000", resourceVersion="1881", generation=1)
    return out


def _runtime_id(draw: st.DrawFn) -> str | None:
    found: str | None = draw(strategies.optional(strategies.runtime_id))
    return found


def _ports(draw: st.DrawFn, default: int) -> int:
    return draw(st.sampled_from((default, default, 2223, 9000, 30001)))


def _shuffled(draw: st.DrawFn, items: list[Any]) -> list[Any]:
    return draw(st.permutations(items))


def _status(draw: st.DrawFn, doc: dict[str, Any]) -> None:
    if draw(st.booleans()):
        doc["status"] = {"phase": "Running", "state": "Running", "replicaStatuses": []}


# --- TfJob --------------------------------------------------------------------------------

TF_VERSIONS = (
    ("mlkube.io/v1beta1", "TfJob", False),
    ("tensorflow.org/v1alpha1", "TfJob", True),
    ("kubeflow.org/v1alpha1", "TFJob", True),
)


@st.composite
def tf_jobs(draw: st.DrawFn) -> Case:
    from kubetrain.convert import tfjob

    api_version, kind, later = draw(st.sampled_from(TF_VERSIONS))
    spell = _Speller(draw)
    meta = _metadata(draw)
    has_master = not later or draw(st.booleans())
    counts = {
        "MASTER": 1 if has_master else 0,
        "WORKER": draw(st.integers(0 if has_master else 1, 3)),
        "PS": draw(st.integers(0, 2)),
    }
    tf_image = draw(
        strategies.optional(st.sampled_from(["tensorflow/tensorflow:1.15.5", "example.com/tf:2"]))
    )
    entries: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (canonical, spelled)
    hosts: list[Host] = []
    for old, count in counts.items():
        if old == "MASTER" and not count:
            continue
        if old == "WORKER" and not count and draw(st.booleans()):
            continue
        port = _ports(draw, tfjob.DEFAULT_PORT)
        default_ps = old == "PS" and draw(st.integers(0, 3)) == 0
        if default_ps:
            template = tfjob.default_ps_template(tf_image if later else None)
        else:
            template = draw(templates("tensorflow"))
        canonical: dict[str, Any] = {"replicas": count, "tfReplicaType": old}
        if port != tfjob.DEFAULT_PORT:
            canonical["tfPort"] = port
        canonical["template"] = template
        spelled: dict[str, Any] = {}
        if count != 1 or spell.maybe():
            spelled[spell("replicas")] = count
        if old != "MASTER" or spell.maybe():
            spelled[spell("tfReplicaType")] = draw(st.sampled_from((old, old.lower())))
        if port != tfjob.DEFAULT_PORT or spell.maybe():
            spelled[spell("tfPort")] = port
        if default_ps:
            if later and spell.maybe():
                spelled[spell("IsDefaultPS")] = True
        else:
            spelled[spell("template")] = _with_restart_policy(draw, template, ("Never", "OnFailure"))
        entries.append((canonical, spelled))
        main = template["spec"]["containers"][0]
        hosts.extend(Host(type=old, index=i, port=port, container=main) for i in range(count))
    spec_c: dict[str, Any] = {}
    spec_s: dict[str, Any] = {}
    runtime = _runtime_id(draw)
    if runtime is not None:
        spec_c["RuntimeId"] = runtime
        spec_s[spell("RuntimeId")] = runtime
    spec_c["replicaSpecs"] = [c for c, _ in entries]
    spec_s[spell("replicaSpecs")] = _shuffled(draw, [s for _, s in entries])
    if later:
        candidates = [(h.type, h.index) for h in hosts]
        chief = ("MASTER", 0) if has_master and draw(st.booleans()) else draw(st.sampled_from(candidates))
        if chief != ("MASTER", 0):
            spec_c["terminationPolicy"] = {"chief": {"replicaName": chief[0], "replicaIndex": chief[1]}}
        if chief != ("MASTER", 0) or spell.maybe():
            spec_s[spell("terminationPolicy")] = {
                spell("chief"): {spell("replicaName"): chief[0], spell("replicaIndex"): chief[1]}
            }
        if tf_image is not None:
            spec_s[spell("tfImage")] = tf_image
    spelled_doc = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": _spelled_metadata(draw, meta),
        "spec": spec_s,
    }
    _status(draw, spelled_doc)
    canonical_doc = {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec_c}
    # A tfImage used by no default PS is not carried over, so it is not written back.
    return Case(
        api_version=api_version, kind=kind, spelled=spelled_doc, canonical=canonical_doc, hosts=tuple(hosts)
    )


# --- MXJob --------------------------------------------------------------------------------

# apiVersion, kind, port field, its default, the type default, chief default (by mode) or None
MX_VERSIONS: tuple[tuple[str, str, str, int, str, str | None], ...] = (
    ("mxnet.mlkube.io/v1beta1", "MxJob", "PsRootPort", 9091, "WORKER", None),
    ("mlkube.io/v1beta1", "MxJob", "PsRootPort", 9091, "WORKER", None),
    ("fioravanzo.org/v1alpha1", "MXJob", "mxPort", 9000, "SCHEDULER", "SCHEDULER"),
    ("kubeflow.org/v1alpha1", "MXJob", "PsRootPort", 9091, "WORKER", "WORKER"),
)


@st.composite
def mx_jobs(draw: st.DrawFn) -> Case:
    api_version, kind, port_key, default_port, default_type, default_chief = draw(
        st.sampled_from(MX_VERSIONS)
    )
    spell = _Speller(draw)
    meta = _metadata(draw)
    mode = draw(st.sampled_from(("dist", "dist", "local")))
    counts = (
        {"SCHEDULER": 1, "SERVER": draw(st.integers(1, 3)), "WORKER": draw(st.integers(1, 3))}
        if mode == "dist"
        else {"WORKER": 1}
    )
    entries: list[tuple[dict[str, Any], dict[str, Any]]] = []
    hosts: list[Host] = []
    for old, count in counts.items():
        port = _ports(draw, default_port)
        template = draw(templates("mxnet"))
        canonical: dict[str, Any] = {"replicas": count, "mxReplicaType": old}
        if port != default_port:
            canonical[port_key] = port
        canonical["template"] = template
        spelled: dict[str, Any] = {}
        if count != 1 or spell.maybe():
            spelled[spell("replicas")] = count
        if old != default_type or spell.maybe():
            spelled[spell("mxReplicaType")] = old
        if port != default_port or spell.maybe():
            spelled[spell(port_key)] = port
        spelled[spell("template")] = _with_restart_policy(draw, template, ("Never", "OnFailure"))
        entries.append((canonical, spelled))
        hosts.extend(
            Host(type=old, index=i, port=port, container=template["spec"]["containers"][0])
            for i in range(count)
        )
    spec_c: dict[str, Any] = {}
    spec_s: dict[str, Any] = {}
    runtime = _runtime_id(draw)
    if runtime is not None:
        spec_c["RuntimeId"] = runtime
        spec_s[spell("RuntimeId")] = runtime
    spec_c["jobMode"] = mode
    if default_chief is None or spell.maybe():
        spec_s[spell("jobMode")] = mode
    spec_c["replicaSpecs"] = [c for c, _ in entries]
    spec_s[spell("replicaSpecs")] = _shuffled(draw, [s for _, s in entries])
    if default_chief is not None:
        chief = draw(st.sampled_from([(h.type, h.index) for h in hosts]))
        spec_c["terminationPolicy"] = {"chief": {"replicaName": chief[0], "replicaIndex": chief[1]}}
        if chief != (default_chief, 0) or spell.maybe():
            spec_s[spell("terminationPolicy")] = {
                spell("chief"): {spell("replicaName"): chief[0], spell("replicaIndex"): chief[1]}
            }
    if api_version == "kubeflow.org/v1alpha1":
        cleanup = draw(st.sampled_from(("All", "Running", "None")))
        spec_c["cleanupPodPolicy"] = cleanup
        if cleanup != "All" or spell.maybe():
            spec_s[spell("cleanupPodPolicy")] = cleanup
    spelled_doc = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": _spelled_metadata(draw, meta),
        "spec": spec_s,
    }
    _status(draw, spelled_doc)
    canonical_doc = {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec_c}
    return Case(
        api_version=api_version, kind=kind, spelled=spelled_doc, canonical=canonical_doc, hosts=tuple(hosts)
    )


# --- Caffe2Job ----------------------------------------------------------------------------


@st.composite
def caffe2_jobs(draw: st.DrawFn) -> Case:
    spell = _Speller(draw)
    meta = _metadata(draw)
    count = draw(st.integers(1, 4))
    template = draw(templates("caffe2", gpus=True))
    kinds = ["redis", "nfs", "gloo", "absent"] + (["none"] if count == 1 else [])
    backend_kind = draw(st.sampled_from(kinds))
    backend_c: dict[str, Any] | None = None
    backend_s: dict[str, Any] | None = None
    short = False
    if backend_kind != "absent":
        backend_c = {"backendType": backend_kind}
        backend_s = {spell("backendType"): backend_kind}
        if backend_kind == "redis":
            host = draw(st.sampled_from(["redis-service", "redis.default.svc"]))
            backend_c["redisHost"] = backend_s[spell("redisHost")] = host
            port = draw(strategies.optional(st.sampled_from([6379, 6380])))
            if port is not None:
                backend_c["redisPort"] = backend_s[spell("redisPort")] = port
        elif backend_kind == "nfs":
            backend_c["nfsPath"] = backend_s[spell("nfsPath")] = draw(
                st.sampled_from(["/share/caffe2", "/nfs/x/"])
            )
        else:
            short = spell.maybe()  # the first releases' `Backend: <type>`
    spec_c: dict[str, Any] = {}
    spec_s: dict[str, Any] = {}
    runtime = draw(
        strategies.optional(strategies.runtime_id | st.integers(1_500_000_000, 1_800_000_000).map(str))
    )
    if runtime is not None:
        spec_c["RuntimeID"] = runtime
        spec_s[spell("RuntimeID")] = runtime
    if backend_c is not None and backend_s is not None:
        spec_c["backendSpecs"] = backend_c
        if short:
            spec_s[spell("Backend")] = backend_kind
        else:
            spec_s[spell("backendSpecs")] = backend_s
    spec_c["replicaSpecs"] = {"replicas": count, "template": template}
    replicas_s: dict[str, Any] = {spell("template"): _with_restart_policy(draw, template, ("Never",))}
    if count != 1 or spell.maybe():
        replicas_s[spell("replicas")] = count
    spec_s[spell("replicaSpecs")] = replicas_s
    if spell.maybe():
        # Defaulted by the operator and never read: a note, not carried over.
        spec_s[spell("terminationPolicy")] = {spell("chief"): {"replicaName": "WORKER", "replicaIndex": 0}}
    spelled_doc = {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "Caffe2Job",
        "metadata": _spelled_metadata(draw, meta),
        "spec": spec_s,
    }
    _status(draw, spelled_doc)
    canonical_doc = {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "Caffe2Job",
        "metadata": meta,
        "spec": spec_c,
    }
    main = template["spec"]["containers"][0]
    hosts = tuple(Host(type="WORKER", index=i, port=2222, container=main) for i in range(count))
    return Case(
        api_version="kubeflow.org/v1alpha1",
        kind="Caffe2Job",
        spelled=spelled_doc,
        canonical=canonical_doc,
        hosts=hosts,
    )


# --- ChainerJob ---------------------------------------------------------------------------

set_names = strategies.word(string.ascii_lowercase, string.ascii_lowercase + DIGITS, 6) | st.just("worker")


def _gpus(template: dict[str, Any]) -> int:
    limits = (template["spec"]["containers"][0].get("resources") or {}).get("limits") or {}
    return int(limits.get("nvidia.com/gpu", 0))


@st.composite
def chainer_jobs(draw: st.DrawFn) -> Case:
    from kubetrain.convert import chainerjob

    spell = _Speller(draw)
    meta = _metadata(draw)
    names = draw(st.lists(set_names, max_size=3, unique_by=lambda n: chainerjob.worker_type(n).lower()))
    master_t = draw(templates("chainer", gpus=True))
    sets = {n: (draw(st.integers(0, 3)), draw(templates("chainer", gpus=True))) for n in names}
    explicit = draw(strategies.optional(st.integers(1, 4)))
    defaults = [_gpus(master_t) or 1, *(_gpus(t) or 1 for _, t in sets.values())]
    # Every host's explicit slots the same N; written back only where N is not every default.
    written = explicit is not None and any(d != explicit for d in defaults)
    master_c: dict[str, Any] = {}
    master_s: dict[str, Any] = {}
    if explicit is not None:
        master_s[spell("mpiConfig")] = {spell("slots"): explicit}
    if written:
        master_c["mpiConfig"] = {"slots": explicit}
    deadline = draw(strategies.optional(st.integers(1, 86400)))
    backoff = draw(strategies.optional(st.integers(0, 100)))
    if deadline is not None:
        master_c["activeDeadlineSeconds"] = master_s[spell("activeDeadlineSeconds")] = deadline
    if backoff is not None:
        master_c["backoffLimit"] = master_s[spell("backoffLimit")] = backoff
    master_c["template"] = master_t
    master_s[spell("template")] = _with_restart_policy(draw, master_t, ("Never", "OnFailure"))
    spec_c: dict[str, Any] = {}
    spec_s: dict[str, Any] = {}
    if sets:
        spec_c["backend"] = "mpi"
    if sets or spell.maybe():
        spec_s[spell("backend")] = "mpi"
    spec_c["master"] = master_c
    spec_s[spell("master")] = master_s
    hosts = [
        Host(
            type="master",
            index=0,
            port=None,
            container=master_t["spec"]["containers"][0],
            slots=explicit or defaults[0],
        )
    ]
    if sets:
        sets_c: dict[str, Any] = {}
        sets_s: dict[str, Any] = {}
        for name in sorted(sets, key=chainerjob.worker_type):
            count, template = sets[name]
            entry_c: dict[str, Any] = {"replicas": count}
            entry_s: dict[str, Any] = {}
            if count != 1 or spell.maybe():
                entry_s[spell("replicas")] = count
            if written:
                entry_c["mpiConfig"] = {"slots": explicit}
            if explicit is not None:
                entry_s[spell("mpiConfig")] = {spell("slots"): explicit}
            entry_c["template"] = template
            entry_s[spell("template")] = _with_restart_policy(
                draw, template, ("Never", "OnFailure", "Always")
            )
            sets_c[name] = entry_c
            sets_s[name] = entry_s
            main = template["spec"]["containers"][0]
            hosts.extend(
                Host(type=name, index=i, port=None, container=main, slots=explicit or _gpus(template) or 1)
                for i in range(count)
            )
        spec_c["workerSets"] = sets_c
        spec_s[spell("workerSets")] = sets_s
    spelled_doc = {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "metadata": _spelled_metadata(draw, meta),
        "spec": spec_s,
    }
    _status(draw, spelled_doc)
    canonical_doc = {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "metadata": meta,
        "spec": spec_c,
    }
    return Case(
        api_version="kubeflow.org/v1alpha1",
        kind="ChainerJob",
        spelled=spelled_doc,
        canonical=canonical_doc,
        hosts=tuple(hosts),
    )


# --- what a converted job renders ---------------------------------------------------------


def pods(job: Any) -> dict[str, dict[str, Any]]:
    """The pods a TrainingJob renders, by name (and its ConfigMap's files under "<files>")."""
    from kubetrain.operator import render
    from kubetrain.operator.frameworks import registry

    objects = render.render(job, registry.default().get(job.spec.framework.name))
    out = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Pod"}
    files = next((o["data"] for o in objects if o["kind"] == "ConfigMap"), None)
    if files is not None:
        out["<files>"] = files
    return out


def main_container(pod: dict[str, Any]) -> dict[str, Any]:
    """The container the old operator's variables are for (the pod names it for kubectl logs)."""
    name = pod["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"]
    found: dict[str, Any] = next(c for c in pod["spec"]["containers"] if c["name"] == name)
    return found


def env(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in main_container(pod).get("env", [])}
