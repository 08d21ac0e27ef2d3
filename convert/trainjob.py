"""Kubeflow Trainer v2's TrainJob as a short TrainingJob: the runtime it names, and its trainer.

A TrainJob (``trainer.kubeflow.org/v1alpha1``, as Trainer v2.0 to v2.3 wrote it) becomes a
TrainingJob that says ``spec.runtimeRef`` and ``spec.trainer``; kubetrain expands it from the
runtime when it is created (``kubetrain.operator.expansion``)::

    TrainJob                              TrainingJob
    spec.runtimeRef {name, kind}          spec.runtimeRef {name, kind}: Trainer's shipped runtimes
                                          as kubetrain's (:data:`.trainer.SHIPPED`); another name
                                          as written, with a warning that it must exist
    spec.trainer.image, command, args,    spec.trainer.image, command, args, env, numNodes,
      env, numNodes, resourcesPerNode       resourcesPerNode (limits, requests)
    spec.trainer.numProcPerNode           spec.trainer.procsPerNode (auto: kubetrain's default)
    podSpecOverrides (v2.0),              spec.replicaSpecs.<Type>.template: the overrides of each
    podTemplateOverrides (v2.1),            target Job (node: Worker, launcher: Launcher), merged in
    runtimePatches (v2.2, v2.3)             order; kubetrain merges them over the runtime's template
    spec.suspend, activeDeadlineSeconds   spec.runPolicy.suspend, activeDeadlineSeconds
    spec.managedBy kueue.x-k8s.io/...     spec.managedBy
    label kueue.x-k8s.io/queue-name       also spec.runPolicy.schedulingPolicy.queue

Not carried over, each with a warning: ``initializer`` (kubetrain runs no dataset or model
initializer), the JobSet's and Jobs' labels and annotations (``spec.labels``,
``spec.annotations``, and the JobSet and Job metadata of a runtime patch: kubetrain creates
neither), overrides of an initializer, ``resourcesPerNode.claims``, patches Kueue wrote
(manager ``kueue.x-k8s.io/...``: Kueue writes its own on kubetrain's Workload), and
``managedBy`` naming Trainer's own controller.

A TrainingJob made from a runtime is whole only once expanded, so it is checked here part by
part: the runtime reference, the trainer and the run policy decode as kubetrain's types, and
each override template has the shape of a pod template's fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api import naming, v1beta1, validation
from kubetrain.convert import kinds, reader, trainer

__all__ = ["KINDS"]

CLUSTER = v1beta1.RuntimeKind.CLUSTER.value
NAMESPACED = v1beta1.RuntimeKind.NAMESPACED.value
SELF_MANAGED = f"{trainer.GROUP}/trainjob-controller"
KUEUE = "kueue.x-k8s.io/"
KUEUE_PODSET = "kueue.x-k8s.io/podset"  # marks the podTemplateOverrides Kueue adds at admission

Path = validation.Path


class _Job:
    """One TrainJob being read."""

    def __init__(self, spec: reader.Reader) -> None:
        self.spec = spec
        self.shipped: trainer.Shipped | None = None
        self.framework: str | None = None  # the runtime's, when it is one Trainer ships
        self.templates: dict[str, dict[str, Any]] = {}  # replica type -> its overrides

    def override(self, types: tuple[str, ...], patch: dict[str, Any]) -> None:
        for t in types:
            if patch:
                self.templates[t] = trainer.merge(self.templates.get(t, {}), patch)


def _trainjob(doc: reader.Reader) -> dict[str, Any]:
    meta, spec = kinds.opening(doc)
    if spec is None or not trainer.whole(doc, "spec"):
        return {}
    j = _Job(spec)
    ref = _runtime_ref(j)
    tr = _trainer(j)
    for o in spec.items("podSpecOverrides"):  # v2.0
        j.override(_targets(j, o), _pod_patch(j, None, o))
    for o in spec.items("podTemplateOverrides"):  # v2.1
        _template_override(j, o)
    for p in spec.items("runtimePatches"):  # v2.2, v2.3
        _runtime_patch(j, p)
    for field in ("labels", "annotations"):
        spec.drop(
            f"not carried over: Trainer put these {field} on the JobSet and its Jobs, which kubetrain does "
            f"not create; the pods' are spec.replicaSpecs.<Type>.template.metadata.{field}",
            field,
        )
    _initializer(spec)
    run_policy = _run_policy(doc, spec, meta)
    managed_by = _managed_by(spec)
    spec.finish()
    out_spec: dict[str, Any] = {"runtimeRef": ref}
    if tr:
        out_spec["trainer"] = tr
    if j.templates:
        out_spec["replicaSpecs"] = {t: {"template": tpl} for t, tpl in j.templates.items()}
    if run_policy:
        out_spec["runPolicy"] = run_policy
    if managed_by:
        out_spec["managedBy"] = managed_by
    if not doc.findings.errors:
        trainer.check_short_job(doc, out_spec)
    return {"apiVersion": kinds.API_VERSION, "kind": v1beta1.KIND, "metadata": meta, "spec": out_spec}


# --- the runtime and the trainer -------------------------------------------------------------


def _runtime_ref(j: _Job) -> dict[str, Any]:
    if not j.spec.has("runtimeRef"):
        j.spec.error("required: the runtime the job is made from", "runtimeRef")
    ref = j.spec.child("runtimeRef")
    if ref is None or not trainer.whole(j.spec, "runtimeRef"):
        return {}
    name = ref.text("name")
    group = ref.text("apiGroup", default=trainer.GROUP)
    if group != trainer.GROUP:
        ref.error(f"kubetrain convert reads runtimes of {trainer.GROUP}, not {group}", "apiGroup")
    kind = ref.text("kind", default=CLUSTER, choices=(CLUSTER, NAMESPACED))
    ref.finish()
    if name is None:
        ref.error("required: the runtime's name", "name")
        return {}
    shipped = trainer.SHIPPED.get(name) if kind == CLUSTER else None
    if shipped is None:
        where = " in the job's namespace" if kind == NAMESPACED else ""
        ref.note(
            f"kept as written: a {kind or CLUSTER} {name} must exist{where} in kubetrain "
            "(kubetrain convert converts Trainer's runtimes too)",
            "name",
        )
        return {"kind": kind or CLUSTER, "name": name}
    j.shipped, j.framework = shipped, shipped.framework
    if shipped.note is not None:
        ref.note(shipped.note, "name")
    return {"kind": CLUSTER, "name": shipped.name}


def _trainer(j: _Job) -> dict[str, Any]:
    t = j.spec.child("trainer")
    if t is None:
        return _runtime_image(j, j.spec.where("runtimeRef"), {})
    out: dict[str, Any] = {}
    image = t.text("image")
    if image:
        out["image"] = image
    for field in ("command", "args"):
        words = t.take(field)
        if words is None:
            continue
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            t.error("expected a list of strings", field)
            continue
        out[field] = list(words)
    env = _env(t)
    if env:
        out["env"] = env
    if j.framework == "mpi":
        _mpi_notes(t, out)
    nodes = t.integer("numNodes", minimum=1)
    if nodes is not None:
        out["numNodes"] = _nodes(j, t, nodes)
    resources = _resources(t)
    if resources:
        out["resourcesPerNode"] = resources
    procs = _procs(j, t)
    if procs is not None:
        out["procsPerNode"] = procs
    t.finish()
    if j.framework == "pytorch" and j.shipped is not None and "command" not in out and "args" not in out:
        t.note(
            "Trainer's torch-distributed ran a command of its own (it printed the PET_ variables and pip list); "
            "kubetrain's runs the image's: give trainer.command"
        )
    return _runtime_image(j, t.path, out)


def _runtime_image(j: _Job, at: Path, out: dict[str, Any]) -> dict[str, Any]:
    """``out``, the trainer, with the image Trainer's shipped runtime ran where it gives none."""
    shipped = j.shipped
    if shipped is None or "image" in out:
        return out
    j.spec.findings.note(
        at,
        f"written out as trainer.image: {shipped.image}, the image Trainer's runtime ran (kubetrain's "
        f"{shipped.name} has none); pin the tag your Trainer release ran",
    )
    return {"image": shipped.image, **out}


def _mpi_notes(t: reader.Reader, out: Mapping[str, Any]) -> None:
    words = [*out.get("command", ()), *out.get("args", ())]
    for field in ("command", "args"):
        if any(trainer.OLD_MOUNT in w for w in out.get(field, ())):
            t.note(
                f"refers to {trainer.OLD_MOUNT}: kubetrain mounts the hostfile at {trainer.CONFIG_MOUNT}",
                field,
            )
    if words and words[0].rsplit("/", 1)[-1] == "mpirun" and "--allow-run-as-root" not in words:
        t.note(
            "mpirun runs as root in kubetrain's mpi-distributed (Trainer's ran as user 1000): it needs "
            "--allow-run-as-root",
            "command",
        )


def _env(t: reader.Reader) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for e in t.items("env"):
        name = e.text("name")
        value = e.take("value")
        source = e.take("valueFrom")
        e.finish()
        if name is None:
            e.error("required: the variable's name", "name")
            continue
        if value is not None and not isinstance(value, str):
            e.error(f"expected a string, got {value!r}", "value")
        if source is not None and not isinstance(source, Mapping):
            e.error(f"expected an object, got {type(source).__name__}", "valueFrom")
        if any(v["name"] == name for v in out):
            e.error(f"duplicate variable {name}", "name")
        item: dict[str, Any] = {"name": name}
        if value is not None:
            item["value"] = value
        if source is not None:
            item["valueFrom"] = source
        out.append(item)
    return out


def _nodes(j: _Job, t: reader.Reader, nodes: int) -> int:
    if j.framework == "xgboost":
        t.note(
            f"becomes {nodes - 1}: Trainer's {nodes} nodes are kubetrain's Master (the tracker, rank 0) "
            f"and {nodes - 1} Workers, which numNodes counts",
            "numNodes",
        )
        return nodes - 1
    if j.shipped is not None and j.shipped.framework == "mpi":
        t.note(
            f"carried over: {nodes} Workers host the ranks, beside a Launcher that hosts none (Trainer's "
            f"launcher was one of the {nodes} nodes)",
            "numNodes",
        )
    return nodes


def _resources(t: reader.Reader) -> dict[str, Any]:
    r = t.child("resourcesPerNode")
    if r is None:
        return {}
    out: dict[str, Any] = {}
    for kind in ("limits", "requests"):
        amounts = r.take(kind)
        if amounts is None:
            continue
        if not isinstance(amounts, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str | int | float) and not isinstance(v, bool)
            for k, v in amounts.items()
        ):
            r.error("expected resource names and quantities", kind)
            continue
        out[kind] = dict(amounts)
    r.drop(
        "not carried over: kubetrain's resourcesPerNode has limits and requests; claim devices in "
        "spec.replicaSpecs.Worker.template",
        "claims",
    )
    r.finish()
    return out


def _procs(j: _Job, t: reader.Reader) -> str | None:
    if j.framework in ("jax", "xgboost"):
        why = (
            "one JAX process per node, as kubetrain"
            if j.framework == "jax"
            else "one worker per GPU, else per node; kubetrain runs one per pod"
        )
        t.drop(f"not carried over: Trainer's {j.framework} plugin ignored it ({why})", "numProcPerNode")
        return None
    return trainer.procs_per_node(t, "numProcPerNode", numbers_only=j.framework == "mpi")


# --- the overrides -----------------------------------------------------------------------------


def _targets(j: _Job, o: reader.Reader) -> tuple[str, ...]:
    if not o.has("targetJobs"):
        o.error("required: the runtime's Jobs to override", "targetJobs")
    found: list[str] = []
    for target in o.items("targetJobs"):
        name = target.text("name")
        target.finish()
        found += _target(j, target, name)
    return tuple(dict.fromkeys(found))


def _target(j: _Job, r: reader.Reader, name: str | None) -> tuple[str, ...]:
    if name is None:
        r.error("required: the replicated Job's name", "name")
        return ()
    types = trainer.types_of(name, j.framework)
    if types is None:
        r.error(
            f"kubetrain has no replica type for a Job {name!r}: it converts Trainer's {trainer.NODE} "
            f"(Worker) and {trainer.LAUNCHER} (Launcher)",
            "name",
        )
        return ()
    if not types:
        r.note(f"not carried over: kubetrain runs no {name}, so nothing to override", "name")
    elif j.shipped is not None and j.framework != "mpi" and name == trainer.LAUNCHER:
        r.note(
            f"not carried over: kubetrain's {j.shipped.name} has no launcher, as Trainer's had none", "name"
        )
        return ()
    return types


def _template_override(j: _Job, o: reader.Reader) -> None:
    """One of v2.1's podTemplateOverrides: ``{targetJobs, metadata, spec}``."""
    labels = o.data.get("metadata", {}).get("labels") if isinstance(o.data.get("metadata"), Mapping) else None
    if isinstance(labels, Mapping) and KUEUE_PODSET in labels:
        o.note(
            "not carried over: Kueue added it when it admitted the job (its flavour's node selectors and "
            "tolerations); Kueue gives kubetrain's job its own"
        )
        o.rest()
        return
    types = _targets(j, o)
    o.drop("not carried over: it named who wrote the override", "manager")
    meta = _pod_metadata(o.child("metadata"))
    patch = _pod_patch(j, meta, o.child("spec"))
    o.finish()
    j.override(types, patch)


def _runtime_patch(j: _Job, p: reader.Reader) -> None:
    """One of v2.2's runtimePatches: ``{manager, time, trainingRuntimeSpec: {template: a JobSet
    template whose replicatedJobs each patch a Job template's pod template}}``."""
    manager = p.text("manager")
    p.take("time")  # when it was written: for Trainer's observability only
    if manager is None:
        p.error("required: who owns the patch", "manager")
    if manager is not None and manager.startswith(KUEUE):
        p.drop(
            f"not carried over: {manager} wrote it when it admitted the job (its flavour's node selectors "
            "and tolerations); Kueue gives kubetrain's job its own",
            "trainingRuntimeSpec",
        )
        p.finish()
        return
    runtime = p.child("trainingRuntimeSpec")
    p.finish()
    template = runtime.child("template") if runtime is not None else None
    if runtime is not None:
        runtime.finish()
    if template is None:
        return
    template.drop(
        "not carried over: labels and annotations of the JobSet, which kubetrain does not create", "metadata"
    )
    jobset = template.child("spec")
    template.finish()
    for rj in jobset.items("replicatedJobs") if jobset is not None else []:
        types = _target(j, rj, rj.text("name"))
        job = rj.child("template")
        rj.finish()
        if job is None:
            continue
        job.drop(
            "not carried over: labels and annotations of the Job, which kubetrain does not create", "metadata"
        )
        job_spec = job.child("spec")
        job.finish()
        pod = job_spec.child("template") if job_spec is not None else None
        if job_spec is not None:
            job_spec.finish()
        if pod is not None:
            patch = _pod_patch(j, _pod_metadata(pod.child("metadata")), pod.child("spec"))
            pod.finish()
            j.override(types, patch)
    if jobset is not None:
        jobset.finish()


def _pod_metadata(m: reader.Reader | None) -> dict[str, Any]:
    if m is None:
        return {}
    out: dict[str, Any] = {}
    for field in ("labels", "annotations"):
        value = m.take(field)
        if value is None:
            continue
        if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
            m.error("expected a map of strings", field)
            continue
        out[field] = dict(value)
    for key in list(m.rest()):
        m.findings.note(
            (*m.path, key), "not carried over: only a pod template's labels and annotations are overridden"
        )
    return out


# The fields of a pod spec Trainer let a TrainJob override (PodSpecOverride, PodTemplateSpecOverride,
# PodSpecPatch), each with its JSON type; and of a container (ContainerOverride, ContainerPatch).
_POD_FIELDS: Mapping[str, type] = {
    "serviceAccountName": str,
    "nodeSelector": dict,
    "affinity": dict,
    "tolerations": list,
    "volumes": list,
    "schedulingGates": list,
    "imagePullSecrets": list,
    "securityContext": dict,
}
_CONTAINER_FIELDS: Mapping[str, type] = {"env": list, "volumeMounts": list, "securityContext": dict}


def _pod_patch(j: _Job, meta: dict[str, Any] | None, s: reader.Reader | None) -> dict[str, Any]:
    """A pod template holding ``meta`` and the overridden fields of the pod spec ``s`` reads."""
    spec: dict[str, Any] = {}
    if s is not None:
        for field, tp in _POD_FIELDS.items():
            value = _typed(s, field, tp)
            if value is not None:
                spec[field] = value
        for field in ("initContainers", "containers"):
            containers = [_container(j, c, field == "containers") for c in s.items(field)]
            if containers:
                spec[field] = containers
        s.finish()
    out: dict[str, Any] = {"metadata": meta} if meta else {}
    if spec:
        out["spec"] = spec
    return out


def _container(j: _Job, c: reader.Reader, main: bool) -> dict[str, Any]:
    name = c.text("name")
    if name is None:
        c.error("required: the runtime's container to override", "name")
    elif main and j.shipped is not None and name in (trainer.NODE, trainer.LAUNCHER):
        c.note(
            f"becomes {j.shipped.container}, the trainer's container in kubetrain's {j.shipped.name}", "name"
        )
        name = j.shipped.container
    out: dict[str, Any] = {"name": name}
    for field, tp in _CONTAINER_FIELDS.items():
        value = _typed(c, field, tp)
        if value is not None:
            out[field] = value
    c.finish()
    return out


def _typed(r: reader.Reader, field: str, tp: type) -> Any:
    value: Any = r.take(field)
    if value is None:
        return None
    if not isinstance(value, tp) or (tp is str and not value):
        r.error(f"expected {'an object' if tp is dict else 'a list' if tp is list else 'a string'}", field)
        return None
    if isinstance(value, list) and not all(isinstance(v, Mapping) for v in value):
        r.error("expected a list of objects", field)
        return None
    return value


# --- the rest of the spec ------------------------------------------------------------------------


def _initializer(spec: reader.Reader) -> None:
    init = spec.child("initializer")
    if init is None:
        return
    for step in ("dataset", "model"):
        given = init.data.get(step)
        uri = given.get("storageUri") if isinstance(given, Mapping) else None
        init.drop(
            f"not carried over: kubetrain runs no {step} initializer (the runtime's {step}-initializer Job "
            f"is dropped too); fetch {uri or f'the {step}'} in the trainer, or in an initContainer of "
            "spec.replicaSpecs.Worker.template",
            step,
        )
    init.finish()


def _run_policy(doc: reader.Reader, spec: reader.Reader, meta: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if spec.truth("suspend"):
        out["suspend"] = True
    deadline = spec.integer("activeDeadlineSeconds", minimum=1)
    if deadline is not None:
        out["activeDeadlineSeconds"] = deadline
    labels = meta.get("labels")
    queue = labels.get(naming.KUEUE_QUEUE_NAME) if isinstance(labels, Mapping) else None
    if isinstance(queue, str) and queue:
        out["schedulingPolicy"] = {"queue": queue}
        doc.findings.note(
            ("metadata", "labels", naming.KUEUE_QUEUE_NAME),
            "carried over, also as spec.runPolicy.schedulingPolicy.queue: kubetrain's job waits in this "
            "Kueue LocalQueue as its own Workload",
        )
    return out


def _managed_by(spec: reader.Reader) -> str | None:
    managed_by = spec.text("managedBy")
    if managed_by == SELF_MANAGED:
        spec.note(
            f"not carried over: {managed_by} is Trainer's own controller; kubetrain manages the job",
            "managedBy",
        )
        return None
    if managed_by:
        spec.note(
            f"carried over: kubetrain leaves the job to {managed_by}, which must know TrainingJobs",
            "managedBy",
        )
    return managed_by


KINDS: tuple[kinds.Kind, ...] = (
    kinds.Kind(kind="TrainJob", api_versions=(trainer.API_VERSION,), to_job=_trainjob),
)
