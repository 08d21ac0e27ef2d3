"""The shape every Kubeflow Training Operator v1 kind shares, read into a TrainingJob and written back.

TFJob, PyTorchJob, MXJob, XGBoostJob, PaddleJob, JAXJob and MPIJob are each a map
``xReplicaSpecs: {Type: {replicas, restartPolicy, template}}`` beside a ``runPolicy`` —
already a TrainingJob's shape (``replicaSpecs`` and ``runPolicy`` are named after it).
A :class:`Flavour` says what sets one kind apart: its replica types, its framework, the
defaults Kubeflow filled in. :func:`begin` reads what they share — replica types matched
ignoring case as Kubeflow did (``worker`` is ``Worker``), the run policy from ``runPolicy``
or from the spec itself where older releases put it — and the kind reads the rest.

Where Kubeflow filled in a default that kubetrain's framework fills differently, the
converted job says Kubeflow's value out loud, so it behaves as it did: a TFJob replica
without a ``restartPolicy`` gets ``Never`` (kubetrain's TensorFlow default is
``OnFailure``). A container port named as Kubeflow named it (``tfjob-port``) becomes
the replica's ``port``. A resource name Kubernetes has removed since
(``alpha.kubernetes.io/nvidia-gpu``) becomes today's
(:func:`.kinds.rename_removed_resources`). Whatever is not carried over, or carried over
changed, is a note at the input's path.
:func:`write` is the way back, collecting what the kind cannot hold.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from kubetrain.api import meta, podtemplate, scheme, v1beta1, validation
from kubetrain.convert import kinds, reader
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.frameworks import registry

__all__ = [
    "GROUP",
    "Extra",
    "Flavour",
    "Problems",
    "Reading",
    "begin",
    "containers",
    "env_notes",
    "main_env",
    "problem",
    "write",
    "write_kind",
]

GROUP = "kubeflow.org"
V1 = f"{GROUP}/v1"
RESTART_POLICIES = tuple(p.value for p in v1beta1.RestartPolicy)
CLEAN_POD_POLICIES = tuple(p.value for p in v1beta1.CleanPodPolicy)
# The run policy's fields as the spec itself held them before runPolicy existed (TFJob of
# tf-operator 1.0, PyTorchJob v1beta2, MPIJob's cleanPodPolicy): read from either place.
_LEGACY_RUN_POLICY = ("cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit")
_RUN_POLICY_MINIMUM = {"ttlSecondsAfterFinished": 0, "activeDeadlineSeconds": 1, "backoffLimit": 0}

Path = validation.Path
Problems = list[validation.FieldError]


@attrs.frozen(kw_only=True)
class Flavour:
    """What tells one Kubeflow kind apart from the others."""

    kind: str
    framework: str  # kubetrain's framework
    specs_field: str  # tfReplicaSpecs
    types: tuple[str, ...]  # as Kubeflow spells them, in its order
    restart_policy: v1beta1.RestartPolicy  # Kubeflow's default, per type unless listed below
    restart_policies: Mapping[str, v1beta1.RestartPolicy] = attrs.field(factory=dict)
    default_replicas: Mapping[str, int] = attrs.field(factory=dict)  # else 1
    port_name: str | None = None  # the container port Kubeflow read, if any
    # Kubeflow set the framework's env on every container (else on its main container only).
    env_everywhere: bool = True
    legacy_run_policy: bool = True
    self_managed: str = f"{GROUP}/training-operator"  # runPolicy.managedBy meaning "Kubeflow itself"
    # Replica types of the kind that kubetrain cannot run, with why.
    unsupported: Mapping[str, str] = attrs.field(factory=dict)

    @property
    def fw(self) -> fw_contract.Framework:
        return registry.default().get(self.framework)

    def canonical(self, key: str) -> str | None:
        return next((t for t in self.types if t.lower() == key.lower()), None)


@attrs.define
class Reading:
    """One Kubeflow document being read into a TrainingJob."""

    flavour: Flavour
    doc: reader.Reader
    spec: reader.Reader
    metadata: dict[str, Any]
    replicas: dict[str, dict[str, Any]] = attrs.field(factory=dict)  # type -> TrainingJob replica spec
    paths: dict[str, Path] = attrs.field(factory=dict)  # type -> its path in the input
    run_policy: dict[str, Any] = attrs.field(factory=dict)
    managed_by: str | None = None  # Kubeflow's runPolicy.managedBy: the TrainingJob's managedBy
    framework: dict[str, Any] = attrs.field(factory=dict)
    success_policy: dict[str, Any] | None = None

    def note(self, path: Path, message: str) -> None:
        self.doc.findings.note(path, message)

    def error(self, path: Path, message: str) -> None:
        self.doc.findings.error(path, message)

    def count(self, replica_type: str) -> int:
        spec = self.replicas.get(replica_type)
        return int(spec["replicas"]) if spec is not None else 0

    def containers(self, replica_type: str) -> list[dict[str, Any]]:
        return containers(self.replicas[replica_type]["template"])

    def main_container(self, replica_type: str) -> dict[str, Any] | None:
        """The replica's main container; None where the template has none, or one of a shape
        admission refuses (it says why at the end): the frameworks' readers expect a pod's shape."""
        template = self.replicas[replica_type]["template"]
        if not self.containers(replica_type) or podtemplate.errors(template):
            return None
        return fw_contract.main_container(template, self.flavour.fw.container)

    def finish(self) -> dict[str, Any]:
        """The TrainingJob read, as a plain document; the spec's unread keys are errors."""
        self.spec.finish()
        return self.document()

    def document(self) -> dict[str, Any]:
        """The TrainingJob read so far, as a plain document."""
        spec: dict[str, Any] = {
            "framework": {"name": self.flavour.framework, **self.framework},
            "replicaSpecs": self.replicas,
        }
        if self.managed_by is not None:
            spec["managedBy"] = self.managed_by
        if self.run_policy:
            spec["runPolicy"] = self.run_policy
        if self.success_policy is not None:
            spec["successPolicy"] = self.success_policy
        return {
            "apiVersion": kinds.API_VERSION,
            "kind": v1beta1.KIND,
            "metadata": self.metadata,
            "spec": spec,
        }


# --- reading ---------------------------------------------------------------------------------


def begin(doc: reader.Reader, flavour: Flavour) -> Reading:
    """Metadata, replica specs and run policy of a Kubeflow document; the kind reads the rest."""
    metadata, spec = kinds.opening(doc)
    if spec is None:  # an error already; an empty one lets the rest read on
        spec = reader.Reader({}, ("spec",), doc.findings)
    r = Reading(flavour=flavour, doc=doc, spec=spec, metadata=metadata)
    _replica_specs(r)
    _run_policy(r)
    return r


def _replica_specs(r: Reading) -> None:
    fl = r.flavour
    if not r.spec.has(fl.specs_field):
        r.spec.error(f"required: the {fl.kind}'s replica types ({', '.join(fl.types)})", fl.specs_field)
        return
    seen: dict[str, str] = {}
    for key, rs in r.spec.entries(fl.specs_field):
        canonical = fl.canonical(key)
        unsupported = next((why for t, why in fl.unsupported.items() if t.lower() == key.lower()), None)
        if unsupported is not None:
            r.error(rs.path, unsupported)
            continue
        if canonical is None:
            r.error(rs.path, f"{fl.kind} has no replica type {key} (it has {', '.join(fl.types)})")
            continue
        if canonical in seen:
            r.error(rs.path, f"{seen[canonical]} and {key} are the same replica type; keep one")
            continue
        seen[canonical] = key
        out = _replica_spec(r, rs, canonical)
        if out is not None:
            r.replicas[canonical] = out
            r.paths[canonical] = rs.path
    # Kubeflow's order, as its documentation lists the types.
    r.replicas = {t: r.replicas[t] for t in fl.types if t in r.replicas}


def _replica_spec(r: Reading, rs: reader.Reader, replica_type: str) -> dict[str, Any] | None:
    fl, fw = r.flavour, r.flavour.fw
    replicas = rs.integer("replicas", minimum=0)
    if replicas is None:
        replicas = fl.default_replicas.get(replica_type, 1)
    policy = rs.text("restartPolicy", choices=RESTART_POLICIES)
    template = rs.take("template")
    rs.finish()
    if template is None:
        rs.error("required: the pod template of every replica", "template")
        return None
    if not isinstance(template, Mapping):
        rs.error(f"expected an object, got {type(template).__name__}", "template")
        return None
    template = copy.deepcopy(dict(template))
    out: dict[str, Any] = {"replicas": replicas}
    kubeflow_policy = policy or fl.restart_policies.get(replica_type, fl.restart_policy).value
    # Kubeflow's own default, said out loud where kubetrain's framework would choose another.
    if policy is not None or kubeflow_policy != fw.restart_policy.value:
        out["restartPolicy"] = kubeflow_policy
    port = _named_port(r, rs, template, fw)
    if port is not None and port != fw.port:
        out["port"] = port
    out["template"] = template
    _template_notes(r, rs.where("template"), template, fw)
    return out


def containers(template: Any) -> list[dict[str, Any]]:
    """The containers of a pod template that has them (admission judges one that has not)."""
    spec = template.get("spec") if isinstance(template, Mapping) else None
    listed = spec.get("containers") if isinstance(spec, Mapping) else None
    if not isinstance(listed, list):
        return []
    return [c for c in listed if isinstance(c, dict)]


def _named_port(
    r: Reading, rs: reader.Reader, template: Mapping[str, Any], fw: fw_contract.Framework
) -> int | None:
    name = r.flavour.port_name
    listed = containers(template)
    if name is None or not listed:
        return None
    main = fw_contract.main_container(template, fw.container)
    ports = (main or {}).get("ports")
    for i, p in enumerate(ports if isinstance(ports, list) else []):
        if isinstance(p, Mapping) and p.get("name") == name:
            value = p.get("containerPort")
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
                where = (
                    *rs.where("template"),
                    "spec",
                    "containers",
                    listed.index(main or {}),
                    "ports",
                    i,
                )
                r.error((*where, "containerPort"), f"expected a port number, got {value!r}")
                return None
            return value
    return None


def _template_notes(r: Reading, at: Path, template: Mapping[str, Any], fw: fw_contract.Framework) -> None:
    spec = template.get("spec")
    if isinstance(spec, Mapping) and "restartPolicy" in spec:
        r.note(
            (*at, "spec", "restartPolicy"),
            "ignored, as Kubeflow ignored it: the replica's restartPolicy decides",
        )
    kinds.rename_removed_resources(template, at, r.note)
    listed = containers(template)
    main = fw_contract.main_container(template, fw.container) if listed else None
    if r.flavour.env_everywhere and main is not None and len(listed) > 1:
        others = ", ".join(str(c.get("name")) for c in listed if c is not main)
        r.note(
            (*at, "spec", "containers"),
            f"Kubeflow set the {r.flavour.kind} env on every container; kubetrain sets it on the main "
            f"container {main.get('name')!r} only, not on {others}",
        )


def _run_policy(r: Reading) -> None:
    rp = r.spec.child("runPolicy")
    out = r.run_policy
    for name in _LEGACY_RUN_POLICY:
        inner = _run_policy_field(rp, name) if rp is not None else None
        outer = _run_policy_field(r.spec, name) if r.flavour.legacy_run_policy else None
        if inner is not None and outer is not None and inner != outer:
            r.spec.error(f"also set in runPolicy ({inner!r}); keep one", name)
        value = inner if inner is not None else outer
        if value is not None:
            out[name] = value
    if rp is None:
        return
    suspend = rp.truth("suspend")
    if suspend:
        out["suspend"] = True
    managed_by = rp.text("managedBy")
    if managed_by and managed_by == r.flavour.self_managed:
        rp.note(
            f"not carried over: {managed_by} is {r.flavour.kind}'s own controller; kubetrain manages the job",
            "managedBy",
        )
    elif managed_by:
        r.managed_by = managed_by
        rp.note(
            f"carried over: kubetrain leaves the job to {managed_by}, which must know TrainingJobs",
            "managedBy",
        )
    scheduling = _scheduling(r, rp.child("schedulingPolicy"))
    if scheduling:
        out["schedulingPolicy"] = scheduling
    rp.finish()


def _run_policy_field(r: reader.Reader, name: str) -> Any:
    if name == "cleanPodPolicy":
        return r.text(name, choices=CLEAN_POD_POLICIES)
    return r.integer(name, minimum=_RUN_POLICY_MINIMUM[name])


def _scheduling(r: Reading, sp: reader.Reader | None) -> dict[str, Any]:
    if sp is None:
        return {}
    out: dict[str, Any] = {}
    min_available = sp.integer("minAvailable", minimum=1)
    if min_available is not None:
        out["minAvailable"] = min_available
    queue = sp.text("queue")
    if queue:
        out["queue"] = queue
        sp.note(
            "carried over: the job waits in this Kueue LocalQueue (with the operator's "
            "--gang-scheduler=volcano: in this Volcano queue, as under Kubeflow)",
            "queue",
        )
    priority_class = sp.text("priorityClass")
    if priority_class:
        out["priorityClass"] = priority_class
    timeout = sp.integer("scheduleTimeoutSeconds", minimum=1)
    if timeout is not None:
        out["scheduleTimeoutSeconds"] = timeout
    sp.drop(
        "not carried over: kubetrain sizes a gang by its pods (minAvailable), not by resources",
        "minResources",
    )
    sp.finish()
    return out


def env_notes(r: Reading, kubeflow_env: Mapping[str, Sequence[str]], reasons: Mapping[str, str]) -> None:
    """A note per replica type whose pods lack variables Kubeflow set in replica 0 of that type
    (``kubeflow_env``), with the ``reasons`` kubetrain leaves them out.

    What kubetrain sets is asked of its framework, not listed here, so a note is never stale.
    """
    for replica_type, names in _lacking(r, kubeflow_env).items():
        why = "; ".join(dict.fromkeys(reasons.get(n, "Kubeflow set it") for n in names))
        r.note(r.paths[replica_type], f"kubetrain does not set {', '.join(names)}: {why}")


def _lacking(r: Reading, kubeflow_env: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    try:
        job = scheme.to_hub(scheme.decode(r.document()))
    except validation.ValidationError:
        return {}  # admission names what is wrong with the job
    assert isinstance(job, v1beta1.TrainingJob)
    fw = r.flavour.fw
    if fw_contract.validate(fw, job):
        return {}
    world = fw_contract.World.of(job, fw)
    out: dict[str, list[str]] = {}
    for replica_type, names in kubeflow_env.items():
        replica = next((x for x in world.replicas if x.type == replica_type and x.index == 0), None)
        if replica is None:
            continue
        main = fw_contract.main_container(replica.spec.template, fw.container) or {}
        own = {e.get("name") for e in main.get("env") or [] if isinstance(e, Mapping)}
        env = fw.env(world, replica)
        lacking = [n for n in names if n not in env and n not in own]
        if lacking:
            out[replica_type] = lacking
    return out


# --- writing back ----------------------------------------------------------------------------


def write(
    job: v1beta1.TrainingJob, flavour: Flavour, *, own_success: bool = False
) -> tuple[dict[str, Any], Problems]:
    """``job`` as ``flavour``'s kind, less what the kind adds itself; and what it cannot hold.

    A success policy other than the framework's own is a problem, unless the kind has a
    success rule of its own (``own_success``) and judges it itself.
    """
    problems: Problems = []
    spec = job.spec
    fw = flavour.fw
    if spec.framework.name != flavour.framework:
        problems.append(
            problem(
                ("framework", "name"), f"a {flavour.kind} runs {flavour.framework}, not {spec.framework.name}"
            )
        )
    replicas: dict[str, Any] = {}
    for key in fw.order(spec.replica_specs):
        canonical = flavour.canonical(key)
        if canonical is None:
            problems.append(
                problem(
                    ("replicaSpecs", key),
                    f"{flavour.kind} has no replica type {key} (it has {', '.join(flavour.types)})",
                )
            )
            continue
        rs = spec.replica_specs[key]
        template = copy.deepcopy(dict(rs.template))
        if rs.port is not None and flavour.port_name is not None:
            _set_port(template, fw, flavour.port_name, rs.port)
        elif rs.port is not None:
            problems.append(problem(("replicaSpecs", key, "port"), f"{flavour.kind} has no port of its own"))
        replicas[canonical] = {
            "replicas": rs.replicas,
            "restartPolicy": (rs.restart_policy or fw.restart_policy).value,
            "template": template,
        }
    out_spec: dict[str, Any] = {flavour.specs_field: {t: replicas[t] for t in flavour.types if t in replicas}}
    run_policy = _write_run_policy(spec, problems)
    if run_policy:
        out_spec["runPolicy"] = run_policy
    if spec.runtime_id is not None:
        problems.append(problem(("runtimeId",), f"{flavour.kind} has no run id of its own"))
    if spec.tensorboard is not None:
        problems.append(problem(("tensorboard",), f"{flavour.kind} runs no TensorBoard"))
    if spec.network.host_names is v1beta1.HostNames.PER_JOB:
        problems.append(problem(("network", "hostNames"), f"{flavour.kind} names its hosts per replica"))
    problems += _failure_policy_problems(spec.failure_policy, flavour.kind)
    if not own_success and spec.success_policy is not None and spec.success_policy != fw.success(spec):
        problems.append(problem(("successPolicy",), f"{flavour.kind} decides success by its own rule"))
    # apiVersion first, as people write it; document.back sets the version asked for.
    out = {
        "apiVersion": V1,
        "kind": flavour.kind,
        "metadata": _write_metadata(job.metadata),
        "spec": out_spec,
    }
    return out, problems


def problem(path: Path, message: str) -> validation.FieldError:
    return validation.FieldError(path=("spec", *path), message=message)


def _set_port(template: dict[str, Any], fw: fw_contract.Framework, name: str, port: int) -> None:
    main = fw_contract.main_container(template, fw.container) if containers(template) else None
    if main is None:
        return
    ports = main.setdefault("ports", [])
    for p in ports:
        if p.get("name") == name:
            p["containerPort"] = port
            return
    ports.append({"name": name, "containerPort": port})


def _write_metadata(meta: meta.ObjectMeta) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in (
        ("name", meta.name),
        ("generateName", meta.generate_name),
        ("namespace", meta.namespace),
        ("labels", dict(meta.labels)),
        ("annotations", dict(meta.annotations)),
        ("finalizers", list(meta.finalizers)),
    ):
        if value:
            out[key] = value
    return out


def _write_run_policy(spec: v1beta1.TrainingJobSpec, problems: Problems) -> dict[str, Any]:
    rp = spec.run_policy
    out: dict[str, Any] = {}
    if rp.clean_pod_policy is not None:
        out["cleanPodPolicy"] = rp.clean_pod_policy.value
    for key, value in (
        ("ttlSecondsAfterFinished", rp.ttl_seconds_after_finished),
        ("activeDeadlineSeconds", rp.active_deadline_seconds),
        (
            "backoffLimit",
            rp.backoff_limit if rp.backoff_limit is not None else spec.failure_policy.budgets.user_code.limit,
        ),
    ):
        if value is not None:
            out[key] = value
    if rp.suspend:
        out["suspend"] = True
    if spec.manager is not None:
        out["managedBy"] = spec.manager
    sp = rp.scheduling_policy
    if sp is not None:
        scheduling = {
            k: v
            for k, v in (
                ("minAvailable", sp.min_available),
                ("queue", sp.queue),
                ("priorityClass", sp.priority_class),
                ("scheduleTimeoutSeconds", sp.schedule_timeout_seconds),
            )
            if v is not None
        }
        if scheduling:
            out["schedulingPolicy"] = scheduling
    return out


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _failure_policy_problems(policy: v1beta1.FailurePolicy, kind: str) -> Problems:
    default = v1beta1.FailurePolicy()
    problems: Problems = []
    for field in attrs.fields(v1beta1.FailurePolicy):
        value, plain = getattr(policy, field.name), getattr(default, field.name)
        if field.name == "budgets":
            # The user-code limit is Kubeflow's backoffLimit; nothing else of a budget is.
            value = attrs.evolve(value, user_code=attrs.evolve(value.user_code, limit=None))
        if value != plain:
            problems.append(
                problem(
                    ("failurePolicy", _camel(field.name)), f"{kind} has no failure policy beyond backoffLimit"
                )
            )
    return problems


def main_env(template: Mapping[str, Any], fw: fw_contract.Framework) -> list[dict[str, Any]] | None:
    main = fw_contract.main_container(template, fw.container) if containers(template) else None
    env = (main or {}).get("env")
    return env if isinstance(env, list) else None


Extra = Callable[[v1beta1.TrainingJob, dict[str, Any], Problems], None]


def write_kind(
    flavour: Flavour, extra: Extra | None, job: v1beta1.TrainingJob, *, own_success: bool = False
) -> dict[str, Any]:
    """``from_job`` of a kind: :func:`write`, then the kind's ``extra`` fields; raises Inexpressible."""
    out, problems = write(job, flavour, own_success=own_success)
    if extra is not None:
        extra(job, out, problems)
    if problems:
        raise kinds.Inexpressible(problems)
    return out
