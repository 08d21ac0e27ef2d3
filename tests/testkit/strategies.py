"""Hypothesis strategies that generate *valid* API values of both versions.

Each strategy respects every rule of the types (bounds, patterns, cross-field rules),
so a failure in a property test is a real bug, not a generator artefact. Free-form
parts (pod templates, third-party options) carry arbitrary JSON to prove it survives.
"""

from __future__ import annotations

import copy
import datetime
import string
import types
import typing
from collections.abc import Mapping
from typing import Any

import attrs
from hypothesis import settings
from hypothesis import strategies as st

from kubetrain.api import meta, schema, v1alpha1, v1beta1, wire
from kubetrain.api.v1alpha1 import trainingjob_conversion

# --- small pieces -------------------------------------------------------------------------

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase


def word(first: str, rest: str, max_size: int, last: str | None = None) -> st.SearchStrategy[str]:
    """first char, then up to max_size-1 more; built directly because from_regex is slow."""
    body = (
        st.text(alphabet=rest, max_size=max_size - 2)
        if last
        else st.text(alphabet=rest, max_size=max_size - 1)
    )
    tail = st.sampled_from(["", *last]) if last else st.just("")
    return st.builds(lambda a, b, c: a + (b + c if c else ""), st.sampled_from(first), body, tail)


dns_label = word(LOWER, LOWER + string.digits + "-", 12, last=LOWER + string.digits)
camel_word = word(UPPER, LOWER + UPPER + string.digits, 8)
upper_word = word(UPPER, UPPER + string.digits, 8)
rule_name = word(LOWER, LOWER + UPPER + string.digits, 9)
runtime_id = word(LOWER + string.digits, LOWER + string.digits, 8)
reason = word(UPPER, LOWER + UPPER + string.digits, 11)
times = st.datetimes(
    min_value=datetime.datetime(2000, 1, 1),
    max_value=datetime.datetime(2100, 1, 1),
    timezones=st.just(datetime.UTC),
).map(meta.utc)
small = st.integers(min_value=0, max_value=1000)
json_scalars = st.none() | st.booleans() | st.integers(-(2**31), 2**31) | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(min_size=1, max_size=6), json_values, max_size=3)


def optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


# Fields whose shape the pod template check reads (api/podtemplate.py); free-form JSON
# in a generated template keeps clear of them.
SHAPED = frozenset(
    {"name", "image", "command", "args", "env", "ports", "volumeMounts", "resources"}
    | {"containers", "initContainers", "volumes"}
)


def _free_form(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in SHAPED}


@st.composite
def pod_templates(draw: st.DrawFn, container_name: str | None = None) -> dict[str, Any]:
    names = draw(st.lists(dns_label, min_size=1, max_size=2, unique=True))
    if container_name is not None:
        names[0] = container_name
    containers = [{**_free_form(draw(json_objects)), "name": n} for n in dict.fromkeys(names)]
    out: dict[str, Any] = {"spec": {**_free_form(draw(json_objects)), "containers": containers}}
    if draw(st.booleans()):
        out["metadata"] = {"labels": draw(st.dictionaries(dns_label, dns_label, max_size=2))}
    return out


quantities = st.sampled_from(["100m", "1", "0.5", "2Gi", "512Mi", "1e3", 1, 4])
shared_sources = st.sampled_from(
    [
        {"persistentVolumeClaim": {"claimName": "training-logs"}},
        {"hostPath": {"path": "/tmp/logs", "type": "DirectoryOrCreate"}},
        {"nfs": {"server": "nfs.example.com", "path": "/exports/logs"}},
    ]
)


@st.composite
def tensorboards(draw: st.DrawFn, templates: list[dict[str, Any]]) -> v1beta1.TensorBoardSpec | None:
    """None, or a TensorBoard whose logDir lies on a shared volume that this adds to one of
    ``templates`` (changed in place: the generated templates mount no volume of their own)."""
    if not draw(st.booleans()):
        return None
    spec = draw(st.sampled_from(templates))["spec"]
    mount = draw(st.sampled_from(["/logs", "/mnt/shared/"]))
    spec["volumes"] = [{"name": "tb-logs", **draw(shared_sources)}]
    container = draw(st.sampled_from(spec["containers"]))
    container["volumeMounts"] = [{"name": "tb-logs", "mountPath": mount}]
    below = draw(st.sampled_from(["", "run", "runs/a-1"]))
    resources = st.fixed_dictionaries(
        {},
        optional={
            k: st.dictionaries(st.sampled_from(["cpu", "memory"]), quantities) for k in ("limits", "requests")
        },
    )
    return v1beta1.TensorBoardSpec(
        log_dir=mount.rstrip("/") + "/" + below if below else mount,
        image=draw(optional(st.sampled_from(["tensorflow/tensorflow:2.18.0", "example.com/tb:1"]))),
        resources=draw(optional(resources)),
    )


conditions = st.lists(
    st.builds(
        meta.Condition,
        type=st.sampled_from([c.value for c in v1beta1.ConditionType]),
        status=st.sampled_from(meta.ConditionStatus),
        reason=reason,
        message=st.text(max_size=20),
        last_transition_time=times,
        observed_generation=optional(small),
    ),
    max_size=4,
    unique_by=lambda c: c.type,
).map(tuple)

object_meta = st.builds(
    meta.ObjectMeta,
    name=dns_label,
    namespace=optional(dns_label),
    uid=optional(st.uuids().map(str)),
    resource_version=optional(st.integers(1, 10**6).map(str)),
    generation=optional(st.integers(1, 100)),
    creation_timestamp=optional(times),
    labels=st.dictionaries(dns_label, dns_label, max_size=2),
    annotations=st.dictionaries(
        dns_label.filter(lambda k: k != trainingjob_conversion.CONVERSION_DATA),
        st.text(max_size=10),
        max_size=2,
    ),
    finalizers=st.lists(dns_label, max_size=1).map(tuple),
)

# --- v1beta1 ------------------------------------------------------------------------------

KNOWN_TYPES = ["Master", "Chief", "Worker", "PS", "Evaluator", "Scheduler", "Server", "Launcher"]


@st.composite
def replica_type_names(draw: st.DrawFn) -> list[str]:
    names = draw(st.lists(st.sampled_from(KNOWN_TYPES) | camel_word, min_size=1, max_size=4))
    unique: dict[str, str] = {}
    for n in names:
        unique.setdefault(n.lower(), n)
    return list(unique.values())


framework_names = st.sampled_from(["tensorflow", "pytorch", "caffe2", "mxnet", "my-framework"])


def caffe2_backends(cls: Any) -> st.SearchStrategy[Any]:
    """Valid Caffe2 backends of either version (both versions share the rules)."""
    return st.one_of(
        st.builds(
            cls,
            type=st.just(v1beta1.Caffe2BackendType.REDIS),
            redis_host=dns_label,
            redis_port=optional(st.integers(1, 65535)),
        ),
        st.builds(cls, type=st.just(v1beta1.Caffe2BackendType.NFS), nfs_path=st.just("/mnt/shared")),
        st.builds(
            cls, type=st.sampled_from([v1beta1.Caffe2BackendType.NONE, v1beta1.Caffe2BackendType.GLOO])
        ),
    )


@st.composite
def framework_specs(draw: st.DrawFn) -> v1beta1.FrameworkSpec:
    name = draw(framework_names)
    if name == "tensorflow":
        return v1beta1.FrameworkSpec(
            name=name,
            tensorflow=draw(
                optional(
                    st.builds(v1beta1.TensorFlowOptions, environment=st.sampled_from(["cloud", "local", ""]))
                )
            ),
        )
    if name == "pytorch":
        elastic = st.integers(1, 8).flatmap(
            lambda lo: st.builds(
                v1beta1.ElasticPolicy,
                min_replicas=st.just(lo),
                max_replicas=st.integers(lo, 16),
                rdzv_backend=st.sampled_from(["c10d", "etcd", "static"]),
                rdzv_id=optional(dns_label),
                rdzv_conf=st.dictionaries(dns_label, dns_label, max_size=2),
                max_restarts=optional(small),
            )
        )
        return v1beta1.FrameworkSpec(
            name=name,
            pytorch=draw(
                optional(
                    st.builds(
                        v1beta1.PyTorchOptions,
                        nproc_per_node=optional(st.sampled_from(["auto", "gpu", "4"])),
                        elastic=optional(elastic),
                    )
                )
            ),
        )
    if name == "caffe2":
        backend = caffe2_backends(v1beta1.Caffe2Backend)
        return v1beta1.FrameworkSpec(
            name=name, caffe2=draw(optional(st.builds(v1beta1.Caffe2Options, backend=optional(backend))))
        )
    return v1beta1.FrameworkSpec(name=name, options=draw(optional(json_objects)))


@st.composite
def failure_rules(draw: st.DrawFn, types: list[str]) -> tuple[v1beta1.FailureRule, ...]:
    names = draw(st.lists(rule_name, max_size=3, unique=True))
    exit_codes = st.builds(
        v1beta1.ExitCodeMatch,
        container_name=optional(dns_label),
        operator=st.sampled_from(v1beta1.ExitCodeOperator),
        values=st.lists(st.integers(0, 255), min_size=1, max_size=3).map(tuple),
        ranges=st.lists(
            st.integers(0, 255).flatmap(
                lambda lo: st.builds(
                    v1beta1.ExitCodeRange, min=st.just(lo), max=optional(st.integers(lo, 255))
                )
            ),
            max_size=2,
        ).map(tuple),
    )
    return tuple(
        v1beta1.FailureRule(
            name=n,
            action=draw(st.sampled_from(v1beta1.FailureAction)),
            replica_types=tuple(draw(st.lists(st.sampled_from(types), max_size=2, unique=True))),
            on_failure_class=draw(optional(st.sampled_from(v1beta1.FailureClass))),
            on_exit_codes=draw(optional(exit_codes)),
            on_reasons=tuple(
                draw(st.lists(st.sampled_from(["OOMKilled", "Evicted", "NodeLost"]), max_size=2))
            ),
            on_pod_conditions=tuple(draw(st.lists(st.just("DisruptionTarget"), max_size=1))),
            restart_scope=draw(optional(st.sampled_from(v1beta1.RestartScope))),
        )
        for n in names
    )


budgets = st.builds(
    v1beta1.Budget,
    limit=optional(small),
    per_index_limit=optional(small),
    window_seconds=optional(st.integers(1, 86400)),
)


@st.composite
def hub_specs(draw: st.DrawFn) -> v1beta1.TrainingJobSpec:
    types = draw(replica_type_names())
    templates = {t: draw(pod_templates()) for t in types}
    tensorboard = draw(tensorboards(list(templates.values())))
    replica_specs = {
        t: v1beta1.ReplicaSpec(
            replicas=draw(st.integers(0, 4)),
            restart_policy=draw(optional(st.sampled_from(v1beta1.RestartPolicy))),
            port=draw(optional(st.integers(1, 65535))),
            template=templates[t],
        )
        for t in types
    }
    framework = draw(framework_specs())
    elastic = framework.pytorch.elastic if framework.pytorch is not None else None
    if elastic is not None and "Worker" in replica_specs:
        # The API keeps an elastic job's workers within its bounds.
        workers = draw(st.integers(elastic.min_replicas, elastic.max_replicas))
        replica_specs["Worker"] = attrs.evolve(replica_specs["Worker"], replicas=workers)
    user_budget = draw(budgets)
    backoff_limit = None if user_budget.limit is not None else draw(optional(small))
    targetable = [(t, s.replicas) for t, s in replica_specs.items()]
    targets = st.sampled_from(targetable).flatmap(
        lambda tc: st.builds(
            v1beta1.SuccessTarget,
            replica_type=st.just(tc[0]),
            index=st.none() if tc[1] == 0 else optional(st.integers(0, tc[1] - 1)),
        )
    )
    # Who manages the job: the field, the deprecated one, or both saying the same.
    manager = draw(optional(st.sampled_from(["kueue.x-k8s.io/multikueue", "example.com/dispatcher"])))
    where = draw(st.sampled_from(["spec", "runPolicy", "both"]))
    return v1beta1.TrainingJobSpec(
        framework=framework,
        runtime_id=draw(optional(runtime_id)),
        managed_by=manager if where != "runPolicy" else None,
        replica_specs=replica_specs,
        run_policy=v1beta1.RunPolicy(
            clean_pod_policy=draw(optional(st.sampled_from(v1beta1.CleanPodPolicy))),
            ttl_seconds_after_finished=draw(optional(small)),
            active_deadline_seconds=draw(optional(st.integers(1, 10**6))),
            backoff_limit=backoff_limit,
            suspend=draw(st.booleans()),
            managed_by=manager if where != "spec" else None,
            scheduling_policy=draw(
                optional(
                    st.builds(
                        v1beta1.SchedulingPolicy,
                        min_available=optional(st.integers(1, 8)),
                        queue=optional(dns_label),
                        priority_class=optional(dns_label),
                        schedule_timeout_seconds=optional(st.integers(1, 600)),
                    )
                )
            ),
        ),
        success_policy=draw(
            optional(
                st.builds(
                    v1beta1.SuccessPolicy,
                    operator=st.sampled_from(v1beta1.SuccessOperator),
                    targets=st.lists(targets, min_size=1, max_size=2).map(tuple),
                )
            )
        ),
        failure_policy=v1beta1.FailurePolicy(
            rules=draw(failure_rules(types)),
            restart_scope=draw(optional(st.sampled_from(v1beta1.RestartScope))),
            budgets=v1beta1.Budgets(user_code=user_budget, infrastructure=draw(budgets)),
            restart_backoff=draw(
                optional(st.builds(v1beta1.RestartBackoff, initial_seconds=small, max_seconds=small))
            ),
            termination_deadline_seconds=draw(optional(small)),
            image_pull_grace_seconds=draw(optional(small)),
        ),
        tensorboard=tensorboard,
        # An elastic job's rendezvous needs per-replica names.
        network=v1beta1.NetworkSpec(
            host_names=draw(
                st.sampled_from([None, v1beta1.HostNames.PER_REPLICA])
                if elastic is not None
                else optional(st.sampled_from(v1beta1.HostNames))
            )
        ),
    )


@st.composite
def hub_statuses(draw: st.DrawFn, types: list[str]) -> v1beta1.TrainingJobStatus:
    keys = draw(st.lists(st.sampled_from(types), unique=True, max_size=len(types)))
    conds = draw(conditions)
    failures = st.builds(
        v1beta1.FailureRecord,
        time=times,
        replica_type=st.sampled_from(types),
        index=st.integers(0, 4),
        pod=dns_label,
        node=optional(dns_label),
        exit_code=optional(st.integers(0, 255)),
        reason=optional(st.sampled_from(["OOMKilled", "Evicted", "Error"])),
        failure_class=st.sampled_from(v1beta1.FailureClass),
        rule=optional(dns_label),
        action=st.sampled_from(v1beta1.FailureAction),
    )
    return v1beta1.TrainingJobStatus(
        state=v1beta1.state_of(conds) if draw(st.booleans()) else None,
        conditions=conds,
        replica_statuses={
            k: draw(
                st.builds(
                    v1beta1.ReplicaStatus,
                    active=small,
                    ready=small,
                    succeeded=small,
                    failed=small,
                    selector=optional(st.text(max_size=10)),
                    attempt=small,
                )
            )
            for k in keys
        },
        start_time=draw(optional(times)),
        completion_time=draw(optional(times)),
        restarts=draw(
            st.builds(v1beta1.RestartCounts, user_code=small, infrastructure=small, uncharged=small)
        ),
        failures=tuple(draw(st.lists(failures, max_size=3))),
        counted_failures=tuple(
            draw(
                st.lists(
                    st.builds(v1beta1.CountedFailures, pod=dns_label, uid=dns_label, count=st.integers(1, 9)),
                    max_size=3,
                    unique_by=lambda c: c.uid,
                )
            )
        ),
        avoided_nodes=tuple(
            draw(
                st.lists(
                    st.builds(
                        v1beta1.AvoidedNode,
                        node=dns_label,
                        reason=st.sampled_from(["NodeLost", "Evicted", "Error"]),
                        pod=optional(dns_label),
                        time=times,
                    ),
                    max_size=3,
                    unique_by=lambda a: a.node,
                )
            )
        ),
        last_refusal=draw(
            optional(
                st.builds(
                    v1beta1.Refusal,
                    kind=st.sampled_from(["Pod", "Service"]),
                    name=dns_label,
                    code=st.sampled_from([403, 409, 422]),
                    message=st.text(max_size=20),
                    time=times,
                    observed_generation=optional(small),
                )
            )
        ),
        observed_generation=draw(optional(small)),
        tensorboard=draw(
            optional(
                st.builds(
                    v1beta1.TensorBoardStatus,
                    name=dns_label,
                    address=dns_label.map(lambda n: f"http://{n}-tensorboard.default.svc:6006"),
                )
            )
        ),
    )


@st.composite
def hub_jobs(draw: st.DrawFn) -> v1beta1.TrainingJob:
    spec = draw(hub_specs())
    status = (
        draw(hub_statuses(list(spec.replica_specs))) if draw(st.booleans()) else v1beta1.TrainingJobStatus()
    )
    return v1beta1.TrainingJob(metadata=draw(object_meta), spec=spec, status=status)


# --- v1alpha1 -----------------------------------------------------------------------------

SEED_TYPES = list(v1alpha1.trainingjob_types.SEED_ORDER)


@st.composite
def alpha_jobs(draw: st.DrawFn) -> v1alpha1.TrainingJob:
    types = draw(st.lists(st.sampled_from(SEED_TYPES) | upper_word, min_size=1, max_size=4, unique=True))
    framework = draw(framework_names)
    templates = {t: draw(pod_templates()) for t in types}
    tensorboard = draw(tensorboards(list(templates.values())))
    specs = tuple(
        v1alpha1.ReplicaSpec(
            replica_type=t,
            replicas=draw(st.integers(0, 4)),
            port=draw(optional(st.integers(1, 65535))),
            template=templates[t],
        )
        for t in draw(st.permutations(types))
    )
    chiefs = [(s.replica_type, s.replicas) for s in specs if s.replicas > 0]
    chief = None
    if chiefs and draw(st.booleans()):
        t, n = draw(st.sampled_from(chiefs))
        chief = v1alpha1.TerminationPolicy(
            chief=v1alpha1.ChiefSpec(replica_name=t, replica_index=draw(st.integers(0, n - 1)))
        )
    backend = draw(optional(caffe2_backends(v1alpha1.Backend))) if framework == "caffe2" else None
    status_types = draw(st.lists(st.sampled_from(types), unique=True))
    status = v1alpha1.TrainingJobStatus(
        state=draw(optional(st.sampled_from(v1beta1.JobState))),
        conditions=draw(conditions),
        replica_statuses=tuple(
            v1alpha1.ReplicaStatus(
                replica_type=t, active=draw(small), succeeded=draw(small), failed=draw(small)
            )
            for t in status_types
        ),
        start_time=draw(optional(times)),
        completion_time=draw(optional(times)),
    )
    return v1alpha1.TrainingJob(
        metadata=draw(object_meta),
        spec=v1alpha1.TrainingJobSpec(
            framework=framework,
            runtime_id=draw(optional(runtime_id)),
            replica_specs=specs,
            termination_policy=chief,
            cleanup_pod_policy=draw(optional(st.sampled_from(v1beta1.CleanPodPolicy))),
            backend=backend,
            tensorboard=tensorboard,
        ),
        status=status,
    )


# --- wire forms ---------------------------------------------------------------------------
# The same objects as JSON the way a user may write them: defaults spelled out at random
# (``replicas: 1``, ``failurePolicy: {}``, ``port: null`` ...) and, in v1alpha1, the
# replica lists in any order. Every such object decodes to the object it came from.


def _bare(tp: Any) -> Any:
    """``tp`` without ``Annotated`` and ``| None``."""
    while True:
        if typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in typing.get_args(tp):
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        else:
            return tp


def _nested_class(tp: Any) -> tuple[str, type] | None:
    """Where an attrs class sits in a field's type: the value, each item, or each value."""
    tp = _bare(tp)
    if attrs.has(tp):
        return "one", tp
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is tuple and attrs.has(_bare(args[0])):
        return "items", _bare(args[0])
    if origin in (dict, Mapping) and attrs.has(_bare(args[1])):
        return "values", _bare(args[1])
    return None


def _spell_out_defaults(draw: st.DrawFn, cls: type, data: dict[str, Any]) -> None:
    hints = typing.get_type_hints(cls, include_extras=True)
    for a in attrs.fields(cls):
        name = schema.wire_name(a)
        if name not in data:
            if a.default is attrs.NOTHING or not draw(st.booleans()):
                continue
            default = a.default.factory() if isinstance(a.default, attrs.Factory) else a.default  # type: ignore[attr-defined]
            data[name] = wire.unstructure(default)
        nested, value = _nested_class(hints[a.name]), data[name]
        if nested is None or value is None:
            continue
        where, inner = nested
        items = [value] if where == "one" else value if where == "items" else list(value.values())
        for item in items:
            _spell_out_defaults(draw, inner, item)


@st.composite
def with_explicit_defaults(draw: st.DrawFn, job: Any) -> dict[str, Any]:
    """``job`` as wire data, with some of its defaults written out."""
    data: dict[str, Any] = wire.unstructure(job)
    _spell_out_defaults(draw, type(job), data)
    return data


@st.composite
def hub_wire_jobs(draw: st.DrawFn) -> dict[str, Any]:
    return draw(with_explicit_defaults(draw(hub_jobs())))


@st.composite
def alpha_wire_jobs(draw: st.DrawFn) -> dict[str, Any]:
    """A v1alpha1 object as written: defaults spelled out, replica lists in any order."""
    data = draw(with_explicit_defaults(draw(alpha_jobs())))
    for part, key in (("spec", "replicaSpecs"), ("status", "replicaStatuses")):
        if isinstance(data.get(part), dict) and data[part].get(key):
            data[part][key] = draw(st.permutations(data[part][key]))
    return data


def _replica_specs(data: dict[str, Any]) -> list[dict[str, Any]]:
    specs = data["spec"]["replicaSpecs"]
    return list(specs.values()) if isinstance(specs, dict) else specs


@st.composite
def rule_breaking(draw: st.DrawFn, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` breaking one or more rules that attrs validators check, JSON types intact.

    What an object stored before a rule existed, or while the webhook was down, can be.
    """
    out = copy.deepcopy(data)
    breaks = draw(
        st.lists(
            st.sampled_from(["replicas", "port", "runtimeId", "no containers", "unnamed container"]),
            min_size=1,
            max_size=3,
        )
    )
    for rule in breaks:
        spec = draw(st.sampled_from(_replica_specs(out)))
        if rule == "replicas":
            spec["replicas"] = draw(st.integers(10001, 99999))
        elif rule == "port":
            spec["port"] = draw(st.sampled_from([0, 65536, 99999]))
        elif rule == "runtimeId":
            out["spec"]["runtimeId"] = draw(st.sampled_from(["Run_1", "", "much-too-long-for-an-id"]))
        elif rule == "no containers":
            spec["template"] = {**spec["template"], "spec": {**spec["template"]["spec"], "containers": []}}
        else:
            containers = [*spec["template"]["spec"]["containers"], {"image": "busybox"}]
            spec["template"] = {
                **spec["template"],
                "spec": {**spec["template"]["spec"], "containers": containers},
            }
    return out


def at_most(n: int) -> settings:
    """Fewer examples than the profile's for properties whose objects cost tens of ms each to
    generate and check (the tier must stay within make test's budget); never more than the
    profile asks, so ``quick`` stays quick."""
    return settings(max_examples=min(n, settings.default.max_examples))
