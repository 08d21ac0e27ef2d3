"""How a job made from a runtime becomes a whole job: once, at creation, and then pinned.

A TrainingJob that says ``spec.runtimeRef`` is expanded where it comes in — the mutating
admission webhook in a cluster, ``kubetrain render`` and the local runner off it — by
:func:`expand`, in four steps:

1. **Resolve.** The runtime it names, then the runtime that one builds on, and so on
   (:data:`MAX_DEPTH` at most). A runtime that is missing, of another namespace, that does not
   decode, or that comes round again (a loop) is one error at ``spec.runtimeRef``.
2. **Merge.** The runtimes' specs, the base first, then the job's own fields (everything but
   ``runtimeRef`` and ``trainer``), each over the last by one rule (:func:`merge`): objects merge
   key by key and the later wins; a list whose items all have a distinct ``name`` merges by name
   (an item of the later list with a name the earlier has is merged into it, a new name is
   appended); any other list is replaced whole; a ``null`` removes what was there.
3. **Fill in the trainer.** ``image`` goes to the main container of every replica type that
   runs the trainer's command and of every type the runtime gives no image; ``command`` and
   ``args`` replace those of the command types; ``env`` is set, by name, where the image goes;
   ``numNodes`` is the replica count of the runtime's node type, ``resourcesPerNode`` merges
   into its main container's resources by resource name, ``procsPerNode`` becomes the
   framework's processes-per-node option. Where each goes is :class:`Places`.
4. **Equip.** Every container that requests a resource of the runtime's ``accelerators`` gets
   its env, host volumes and tolerations (:func:`kubetrain.operator.accelerators.apply`); and a
   job that says no ``network.hostNames`` is given the default a v1beta1 job is given at
   creation (:mod:`kubetrain.api.v1beta1.trainingjob_defaults`).

The stored job keeps ``runtimeRef`` (with the runtime's ``generation`` then) and ``trainer`` as
the user wrote them, beside the result: nothing reads the runtime again, so editing or deleting
it changes no job that exists. :class:`Expanded` also remembers where every value of the result
came from, so that :meth:`Expanded.explain` says an error found in the whole job in the terms
of whoever wrote the field — ``spec.trainer.image`` of the job, or
``ClusterTrainingRuntime torch-distributed: spec.replicaSpecs.Worker.template...`` of a runtime.

Pure: :data:`Resolve` is how the caller reads runtimes (the apiserver, files).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from kubetrain.api import podtemplate, v1beta1, validation, wire
from kubetrain.api.v1beta1 import trainingjob_defaults
from kubetrain.operator import accelerators
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.frameworks import registry

__all__ = [
    "CLASSES",
    "JOB",
    "MAX_DEPTH",
    "REF",
    "Expanded",
    "Places",
    "Resolve",
    "Unresolved",
    "expand",
    "from_documents",
    "merge",
    "needs",
    "places",
    "resolve_runtime",
]

Obj = dict[str, Any]
Path = validation.Path
# Who wrote a value, and where in their object: ("TrainingJob", ("spec", "trainer", "image")).
Where = tuple[str, Path]
# (kind, name, namespace or None) -> the runtime as wire data, or None when there is none.
Resolve = Callable[[v1beta1.RuntimeKind, str, str | None], Mapping[str, Any] | None]

MAX_DEPTH = 8
REF = ("spec", "runtimeRef")
JOB = "TrainingJob"
# What a job's spec says that is not merged over the runtime: it says which runtime, and what fills it.
_JOB_ONLY = ("runtimeRef", "trainer")
# What a runtime's spec says that a job's does not.
_RUNTIME_ONLY = ("runtimeRef", "trainer", "accelerators")
CLASSES: dict[v1beta1.RuntimeKind, type[v1beta1.ClusterTrainingRuntime | v1beta1.TrainingRuntime]] = {
    v1beta1.RuntimeKind.CLUSTER: v1beta1.ClusterTrainingRuntime,
    v1beta1.RuntimeKind.NAMESPACED: v1beta1.TrainingRuntime,
}


class Unresolved(validation.ValidationError):
    """The job's runtime cannot be used: missing, of another namespace, invalid, or a loop."""


@attrs.frozen(kw_only=True)
class Runtime:
    """A runtime resolved with every runtime it builds on: their merged spec."""

    refs: tuple[v1beta1.RuntimeRef, ...]  # the one named first, each with its generation
    spec: Obj  # the merged spec, runtimeRef left out
    origins: dict[Path, Where]

    @property
    def label(self) -> str:
        return str(self.refs[0])


@attrs.frozen(kw_only=True)
class Expanded:
    """A job expanded from its runtime: ``obj`` is what is stored."""

    obj: Obj
    runtime: Runtime
    origins: Mapping[Path, Where]

    def origin(self, path: Path) -> Where | None:
        """Who wrote the value at ``path`` of :attr:`obj`, and where in their object; ``None``
        for a part both wrote (merged), or that neither did."""
        for n in range(len(path), 0, -1):
            where = self.origins.get(path[:n])
            if where is not None:
                return where[0], (*where[1], *path[n:])
        return None

    def explain(self, error: validation.FieldError) -> validation.FieldError:
        """``error`` (found in :attr:`obj`) in the terms of whoever wrote the field."""
        where = self.origin(error.path)
        if where is None or where[0] == JOB:
            return error if where is None else attrs.evolve(error, path=where[1])
        return validation.FieldError(
            path=REF, message=f"{where[0]}: {validation.format_path(where[1])}: {error.message}"
        )


def expand(obj: Mapping[str, Any], resolve: Resolve, frameworks: registry.Registry | None = None) -> Expanded:
    """``obj``, a TrainingJob as wire data that says ``spec.runtimeRef``, expanded (see the module).

    Raises :class:`Unresolved` for a runtime it cannot use, ``ValidationError`` for a
    ``runtimeRef`` or ``trainer`` that does not decode or a trainer that does not fit the runtime.
    """
    spec = obj.get("spec")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("runtimeRef"), Mapping):
        raise validation.ValidationError.at(REF, "Required value: the runtime the job is made from")
    ref = _structure(spec["runtimeRef"], v1beta1.RuntimeRef, REF)
    trainer = _structure(spec.get("trainer") or {}, v1beta1.Trainer, ("spec", "trainer"))
    namespace = (obj.get("metadata") or {}).get("namespace")
    runtime = resolve_runtime(ref, namespace if isinstance(namespace, str) else None, resolve)
    origins = dict(runtime.origins)
    own = {k: v for k, v in spec.items() if k not in _JOB_ONLY}
    merged = merge(_without(runtime.spec, _RUNTIME_ONLY), own, ("spec",), (JOB, ("spec",)), origins)
    misshapen = _misshapen(merged, trainer)
    if misshapen:  # the job's own fields, not yet checked by the schema (a mutating webhook runs first)
        explained = Expanded(obj={}, runtime=runtime, origins=origins)
        raise validation.ValidationError(explained.explain(e) for e in misshapen)
    known = registry.default() if frameworks is None else frameworks
    _fill(merged, trainer, runtime, known, origins)
    _equip(merged, runtime)
    merged["runtimeRef"] = wire.unstructure(runtime.refs[0])
    if "trainer" in spec:
        merged["trainer"] = copy.deepcopy(spec["trainer"])
    out = {**copy.deepcopy(dict(obj)), "spec": merged}
    return Expanded(obj=out, runtime=runtime, origins=origins)


def resolve_runtime(ref: v1beta1.RuntimeRef, namespace: str | None, resolve: Resolve) -> Runtime:
    """The runtime ``ref`` names, for a job of ``namespace``, merged with those it builds on."""
    chain: list[tuple[v1beta1.RuntimeRef, Mapping[str, Any]]] = []
    at: v1beta1.RuntimeRef | None = ref
    while at is not None:
        _check_namespace(at, namespace, chain[-1][0] if chain else None)
        if any((r.kind, r.name) == (at.kind, at.name) for r, _ in chain):
            loop = " → ".join(str(r) for r, _ in [*chain, (at, {})])
            raise Unresolved([validation.FieldError(path=REF, message=f"a loop of runtimes: {loop}")])
        if len(chain) == MAX_DEPTH:
            raise Unresolved.at(REF, f"{ref} builds on more than {MAX_DEPTH} runtimes")
        found = resolve(at.kind, at.name, namespace if at.kind is v1beta1.RuntimeKind.NAMESPACED else None)
        if found is None:
            where = (
                f" in namespace {namespace}"
                if at.kind is v1beta1.RuntimeKind.NAMESPACED and namespace
                else ""
            )
            via = f" (the runtime {chain[-1][0]} builds on)" if chain else ""
            raise Unresolved.at(REF, f'{at.kind} "{at.name}" not found{where}{via}')
        try:
            runtime = wire.structure(found, CLASSES[at.kind])
        except validation.ValidationError as e:
            raise Unresolved(
                validation.FieldError(path=REF, message=f"{at}: {err}") for err in e.errors
            ) from None
        generation = (found.get("metadata") or {}).get("generation")
        chain.append(
            (attrs.evolve(at, generation=generation if isinstance(generation, int) else None), found)
        )
        at = runtime.spec.runtime_ref
    # The base first: each runtime overrides those it builds on.
    origins: dict[Path, Where] = {}
    spec: Obj = {}
    for r, found in reversed(chain):
        own = _without(found.get("spec") or {}, ("runtimeRef",))
        spec = merge(spec, own, ("spec",), (str(r), ("spec",)), origins)
    return Runtime(refs=tuple(r for r, _ in chain), spec=spec, origins=origins)


def merge(base: Any, over: Any, at: Path, by: Where, origins: dict[Path, Where]) -> Any:
    """``over`` merged over ``base`` by the module's rule, as a new value; ``origins`` learns,
    for each part of the result taken whole from ``over``, that ``by`` wrote it (``by``'s path
    being where ``over`` is in its writer's object)."""
    if isinstance(base, Mapping) and isinstance(over, Mapping):
        out = {k: copy.deepcopy(v) for k, v in base.items() if k not in over}
        for k, v in over.items():
            if v is None:  # a null removes the field
                out.pop(k, None)
                _forget(origins, (*at, k))
            elif k in base:
                out[k] = merge(base[k], v, (*at, k), (by[0], (*by[1], k)), origins)
            else:
                out[k] = _took(v, (*at, k), (by[0], (*by[1], k)), origins)
        return dict(sorted(out.items(), key=lambda kv: _order(base, over, kv[0])))
    if _named(base) and _named(over):
        out_list = [copy.deepcopy(item) for item in base]
        names = [item["name"] for item in base]
        for j, item in enumerate(over):
            where = (by[0], (*by[1], j))
            if item["name"] in names:
                i = names.index(item["name"])
                out_list[i] = merge(base[i], item, (*at, i), where, origins)
            else:
                out_list.append(_took(item, (*at, len(out_list)), where, origins))
                names.append(item["name"])
        return out_list
    return _took(over, at, by, origins)


@attrs.frozen(kw_only=True)
class Places:
    """Where a runtime's trainer section goes: the node type and the command types, by the
    runtime's ``trainer`` or else the framework's defaults."""

    node: str
    command: tuple[str, ...]
    container: str  # the framework's main container name


def places(spec: Mapping[str, Any], fw: fw_contract.Framework, at: Where) -> Places:
    """Where a trainer section fills ``spec`` (a merged runtime spec); ``at`` is where the
    runtime's ``trainer`` is, for errors."""
    types = list((spec.get("replicaSpecs") or {}).keys())
    policy = spec.get("trainer") or {}

    def spelled(name: str, field: str) -> str:
        found: str | None = next((str(t) for t in types if str(t).lower() == name.lower()), None)
        if found is None:
            path = validation.format_path((*at[1], field))
            raise validation.ValidationError.at(
                REF, f"{at[0]}: {path}: no replica type {name} (it has {', '.join(types)})"
            )
        return found

    if policy.get("replicaType"):
        node = spelled(policy["replicaType"], "replicaType")
    elif any(t.lower() == "worker" for t in types):
        node = spelled("Worker", "replicaType")
    elif len(types) == 1:
        node = types[0]
    else:
        raise validation.ValidationError.at(
            REF,
            f"{at[0]}: {validation.format_path((*at[1], 'replicaType'))}: Required value: it has no Worker",
        )
    if policy.get("commandReplicaTypes"):
        command = tuple(spelled(t, "commandReplicaTypes") for t in policy["commandReplicaTypes"])
    elif fw.rank_launcher is not None and any(t.lower() == fw.rank_launcher.lower() for t in types):
        command = (spelled(fw.rank_launcher, "commandReplicaTypes"),)
    else:
        command = tuple(types)
    return Places(node=node, command=command, container=fw.container)


def needs(runtime: Runtime, frameworks: registry.Registry | None = None) -> tuple[str, ...]:
    """What a short job must give this runtime (``image``, ``command``): what its command types'
    main containers lack."""
    fw = _framework(runtime.spec, frameworks)
    if fw is None:
        return ()
    where = places(runtime.spec, fw, (runtime.label, ("spec", "trainer")))
    out: list[str] = []
    for t in where.command:
        container = _main(runtime.spec, t, where.container)
        for field in ("image", "command"):
            if container is not None and not container.get(field) and field not in out:
                if field == "command" and container.get("args"):
                    continue
                out.append(field)
    return tuple(out)


def from_documents(docs: Iterable[Mapping[str, Any]]) -> Resolve:
    """A :data:`Resolve` over runtimes read from files: a TrainingRuntime with no namespace
    serves any."""
    found: dict[tuple[str, str, str | None], Mapping[str, Any]] = {}
    for d in docs:
        if d.get("kind") in CLASSES and isinstance(d.get("metadata"), Mapping):
            meta = d["metadata"]
            namespace = meta.get("namespace") if d["kind"] == v1beta1.RuntimeKind.NAMESPACED else None
            found[(d["kind"], str(meta.get("name")), namespace)] = d

    def resolve(kind: v1beta1.RuntimeKind, name: str, namespace: str | None) -> Mapping[str, Any] | None:
        return found.get((kind.value, name, namespace)) or found.get((kind.value, name, None))

    return resolve


# --- the trainer, the accelerators, the defaults ---------------------------------------------


def _fill(
    spec: Obj,
    trainer: v1beta1.Trainer,
    runtime: Runtime,
    frameworks: registry.Registry,
    origins: dict[Path, Where],
) -> None:
    fw = _framework(spec, frameworks)
    if fw is None:
        return  # an unknown framework: intake says so at spec.framework.name
    at = (runtime.label, ("spec", "trainer"))
    where = places({**spec, "trainer": runtime.spec.get("trainer")}, fw, at)
    given = ("spec", "trainer")
    replicas = spec.get("replicaSpecs") or {}
    if not isinstance(replicas, dict) or where.node not in replicas:
        return  # nothing to fill: decoding the job says what is missing
    for t, replica in replicas.items():
        containers = ((replica.get("template") or {}).get("spec") or {}).get("containers") or []
        main = fw_contract.main_container({"spec": {"containers": containers}}, where.container)
        if main is None:
            continue  # ambiguous: the framework's rules say so
        i = containers.index(main)
        c_path = ("spec", "replicaSpecs", t, "template", "spec", "containers", i)
        runs = t in where.command
        # The trainer's image (and env) go where its code runs, and where the runtime gives no image.
        gets_image = runs or not main.get("image")
        if gets_image:  # given or not, the image here is the trainer's to give
            origins[(*c_path, "image")] = (JOB, (*given, "image"))
        if trainer.image is not None and gets_image:
            main["image"] = trainer.image
        for field in ("command", "args"):
            value = getattr(trainer, field)
            if runs and value is not None:
                main[field] = list(value)
                origins[(*c_path, field)] = (JOB, (*given, field))
        if trainer.env and gets_image:
            env = [e for e in main.get("env") or [] if e.get("name") not in {v.name for v in trainer.env}]
            for j, var in enumerate(trainer.env):
                origins[(*c_path, "env", len(env))] = (JOB, (*given, "env", j))
                env.append(wire.unstructure(var))
            main["env"] = env
        if t == where.node and trainer.resources_per_node:
            resources = main.setdefault("resources", {})
            for kind, amounts in trainer.resources_per_node.items():
                resources.setdefault(kind, {}).update(amounts or {})
                for name in amounts or {}:
                    origins[(*c_path, "resources", kind, name)] = (
                        JOB,
                        (*given, "resourcesPerNode", kind, name),
                    )
    if trainer.num_nodes is not None:
        replicas[where.node]["replicas"] = trainer.num_nodes
        origins[("spec", "replicaSpecs", where.node, "replicas")] = (JOB, (*given, "numNodes"))
    if trainer.procs_per_node is not None:
        _procs(spec, fw, trainer.procs_per_node, origins)


def _procs(spec: Obj, fw: fw_contract.Framework, procs: str, origins: dict[Path, Where]) -> None:
    framework = spec["framework"]
    at = (JOB, ("spec", "trainer", "procsPerNode"))
    if fw.name == "pytorch":
        framework.setdefault("pytorch", {})["nprocPerNode"] = procs
        origins[("spec", "framework", "pytorch", "nprocPerNode")] = at
    elif fw.rank_launcher is not None and procs.isdigit():
        framework.setdefault("options", {})["slotsPerWorker"] = int(procs)
        origins[("spec", "framework", "options", "slotsPerWorker")] = at
    else:
        wanted = "a number of slots" if fw.rank_launcher is not None else "no processes-per-node setting"
        raise validation.ValidationError.at(at[1], f"framework {fw.name} takes {wanted}, not {procs!r}")


def _equip(spec: Obj, runtime: Runtime) -> None:
    profiles = {
        k: wire.structure(v, v1beta1.AcceleratorProfile)
        for k, v in (runtime.spec.get("accelerators") or {}).items()
    }
    for replica in (spec.get("replicaSpecs") or {}).values():
        template = replica.get("template")
        if profiles and isinstance(template, dict) and isinstance(template.get("spec"), dict):
            accelerators.apply(template, profiles)
    network = spec.setdefault("network", {})
    pytorch = (spec.get("framework") or {}).get("pytorch") or {}
    if "hostNames" not in network and "elastic" not in pytorch:
        network["hostNames"] = trainingjob_defaults.HOST_NAMES.value


def _misshapen(spec: Obj, trainer: v1beta1.Trainer) -> list[validation.FieldError]:
    """What the filling and the equipping read or extend in the merged ``spec``, that is not of
    the type a job's is: the job's own fields come here before the schema has looked at them."""

    def wrong(path: Path, value: Any, expected: str) -> validation.FieldError:
        return validation.FieldError(path=path, message=f"expected {expected}, got {wire.json_name(value)}")

    found = [
        wrong(("spec", key), spec[key], "object")
        for key in ("framework", "replicaSpecs", "network")
        if key in spec and not isinstance(spec[key], Mapping)
    ]
    framework = spec.get("framework")
    if isinstance(framework, Mapping):
        found += [
            wrong(("spec", "framework", key), framework[key], "object")
            for key in ("pytorch", "options")
            if key in framework and not isinstance(framework[key], Mapping)
        ]
    replicas = spec.get("replicaSpecs")
    for t, replica in replicas.items() if isinstance(replicas, Mapping) else ():
        at: Path = ("spec", "replicaSpecs", str(t))
        if not isinstance(replica, Mapping):
            found.append(wrong(at, replica, "object"))
        elif "template" in replica:
            found += podtemplate.errors(replica["template"], (*at, "template"))
            pod = replica["template"].get("spec") if isinstance(replica["template"], Mapping) else None
            tolerations = pod.get("tolerations") if isinstance(pod, Mapping) else None
            if tolerations is not None and not isinstance(tolerations, list):
                found.append(wrong((*at, "template", "spec", "tolerations"), tolerations, "array"))
    for kind, amounts in (trainer.resources_per_node or {}).items():
        if amounts is not None and not isinstance(amounts, Mapping):
            found.append(
                wrong(("spec", "trainer", "resourcesPerNode", kind), amounts, "a map of resource quantities")
            )
    return found


# --- helpers -------------------------------------------------------------------------------


def _structure(value: Any, cls: type[Any], at: Path) -> Any:
    try:
        return wire.structure(value, cls)
    except validation.ValidationError as e:
        raise e.under(at) from None


def _framework(spec: Mapping[str, Any], frameworks: registry.Registry | None) -> fw_contract.Framework | None:
    name = (spec.get("framework") or {}).get("name")
    known = registry.default() if frameworks is None else frameworks
    try:
        return known.get(name) if isinstance(name, str) else None
    except registry.UnknownFrameworkError:
        return None


def _main(spec: Mapping[str, Any], replica_type: str, name: str) -> Mapping[str, Any] | None:
    template = ((spec.get("replicaSpecs") or {}).get(replica_type) or {}).get("template") or {}
    containers = (template.get("spec") or {}).get("containers") or []
    return fw_contract.main_container({"spec": {"containers": containers}}, name) if containers else None


def _check_namespace(ref: v1beta1.RuntimeRef, namespace: str | None, by: v1beta1.RuntimeRef | None) -> None:
    who = f"{by} builds on" if by is not None else "a job names"
    if (
        by is not None
        and by.kind is v1beta1.RuntimeKind.CLUSTER
        and ref.kind is v1beta1.RuntimeKind.NAMESPACED
    ):
        raise Unresolved.at(
            REF, f"{by}: a ClusterTrainingRuntime builds only on ClusterTrainingRuntimes, not {ref}"
        )
    if ref.namespace is None:
        return
    if ref.kind is v1beta1.RuntimeKind.CLUSTER:
        raise Unresolved.at((*REF, "namespace"), f"a ClusterTrainingRuntime has no namespace ({who} {ref})")
    if namespace is not None and ref.namespace != namespace:
        raise Unresolved.at(
            (*REF, "namespace"),
            f"a TrainingRuntime serves only its own namespace: {who} {ref.namespace}/{ref.name} "
            f"from namespace {namespace}",
        )


def _took(value: Any, at: Path, by: Where, origins: dict[Path, Where]) -> Any:
    _forget(origins, at)
    origins[at] = by
    return _without_nulls(value)


def _without_nulls(value: Any) -> Any:
    """A copy of ``value`` without the fields it sets to null: a null only ever removes."""
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _forget(origins: dict[Path, Where], at: Path) -> None:
    """What was said of ``at`` and below it no longer holds: a later writer replaced it."""
    for path in [p for p in origins if p[: len(at)] == at]:
        del origins[path]


def _named(value: Any) -> bool:
    if not isinstance(value, list) or not value:
        return False
    names = [item.get("name") if isinstance(item, Mapping) else None for item in value]
    return all(isinstance(n, str) for n in names) and len(set(names)) == len(names)


def _order(base: Mapping[str, Any], over: Mapping[str, Any], key: str) -> tuple[int, int]:
    """The base's keys first, in its order, then the new ones in theirs."""
    keys = list(base)
    return (0, keys.index(key)) if key in base else (1, list(over).index(key))


def _without(spec: Mapping[str, Any], keys: Iterable[str]) -> Obj:
    return {k: v for k, v in spec.items() if k not in set(keys)}
