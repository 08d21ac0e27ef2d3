"""What the operator's caches keep of each kind: only the fields it reads.

An informer stores every object it lists or watches for as long as the object exists, and
an apiserver's pod is mostly what the operator never looks at — ``managedFields``, the
whole spec the operator rendered itself, every container's image, IDs and start times. At
40,000 pods that is most of the operator's memory. So each cache stores a *projection*: a
new, small dict holding exactly what its readers use — the projection of
controller-runtime's cache transforms, written per kind:

- **Pods** keep what :meth:`kubetrain.api.observed.Pod.of` reads (name, uid, the
  replica labels, creation and deletion times, ``spec.nodeName`` and ``restartPolicy``, phase and reason, each
  container's name, restart count and the exit code, reason and waiting reason of its
  ``state``/``lastState`` and whether it runs (in a pod with kubetrain's agent, since when, and
  when its agent exited for a hang), the condition types and statuses with the reason of a
  disruption and the reason, message and time of ``PodScheduled: False``), what the
  reconciler's Kueue path reads (every label, the ``retriable-in-group`` annotation), the attempt
  an in-place restart's barrier is open for (``opened-attempt``) and
  what the caches themselves need: ``namespace`` and ``resourceVersion`` (the store's key
  and its re-list comparison), the controlling owner reference (the ``owner`` index, the
  tombstones and the controller's owner handler), ``apiVersion`` and ``kind``.
- **Services** and **ConfigMaps** keep their metadata's identity, labels (a scale-down
  reads the replica labels of Services) and controlling owner: the reconciler asks only
  whether they exist and whose they are, never for their spec or data.
  A pod's node affinity is kept only as the node names it excludes (``avoiding``).
- **Nodes** keep their name (whether a pod's node still exists), their taints' keys and the
  types of their true conditions (whether it is unhealthy: :mod:`.policies.avoid`), and whether
  they declare ``RestartAllContainersOnContainerExits`` (pods can restart in place there).
- **TrainingJobs** keep everything but ``managedFields`` and kubectl's
  ``last-applied-configuration`` annotation (a second copy of the spec): the reconciler
  decodes the whole spec and status.

A restart in place erases something the operator needs: the kubelet that restarts a pod whose
main container failed (its ``RestartAllContainers`` rule) shows that container's exit for about a
tenth of a second, then gives every container the ``lastState`` of the restart (reason
``RestartingAllContainers``, exit code 137). :func:`carry_pod` keeps the real end in the cache: the
informer hands it the cached projection and the new one, so the watch event that showed the end
is never lost to a pass that reads the cache later.

Keys are written here as literals, so every projected object shares one copy of each key
string, which decoding JSON event by event does not; the strings objects have in common
(namespaces, labels, owner names and UIDs, phases, condition types, container names and
reasons, and every key and short string of a TrainingJob) are interned for the same reason,
and the small dicts many pods hold alike — a condition without details, a running
container's name and restart count — are stored once and shared. A cached object is read,
never written (:mod:`.runtime.cache`), so sharing is safe. The projections are pure: they
build new dicts and never change their argument. A new reader of a cached field must add it here; the
tests check that :meth:`~kubetrain.api.observed.Pod.of` and the lifecycle see the
same of a pod and of its projection.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from kubetrain.api import naming, observed
from kubetrain.operator.scheduling import kueue_pods

__all__ = [
    "LAST_APPLIED",
    "Projection",
    "carry_pod",
    "config_map",
    "node",
    "pod",
    "priority_class",
    "service",
    "training_job",
]

Obj = dict[str, Any]
Projection = Callable[[Obj], Obj]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# The annotations of a pod that the operator reads.
_POD_ANNOTATIONS = (kueue_pods.RETRIABLE, naming.OPENED)
# True conditions whose reason the failure semantics read (a disruption's cause).
_DISRUPTIONS = frozenset({"DisruptionTarget", "TerminationTarget"})

# sys.intern'd strings are freed with their last reference, except on CPython 3.12.0-3.12.5, where
# they were immortal (python/cpython#113993): there, interning every job's names would leak them.
_intern: Callable[[str], str] = (
    sys.intern if not ((3, 12) <= sys.version_info[:3] < (3, 12, 6)) else lambda s: s
)
# Strings longer than this are unlikely to be shared: not worth hashing.
_SHORT = 64
# Small dicts many pods hold alike (a condition without details, a running container's name and
# restart count) are stored once and shared; a bounded number of them.
_SHARED_MAX = 4096
_shared: dict[tuple[tuple[str, type, Any], ...], Obj] = {}
# A running container's state: only that it runs is read (observed.Pod.running); one dict for all.
_RUNNING: Obj = {"running": {}}


def pod(obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    out_meta = _identity(meta)
    _copy(out_meta, meta, "creationTimestamp")
    annotations = meta.get("annotations") or {}
    kept = {k: _text(annotations[k]) for k in _POD_ANNOTATIONS if k in annotations}
    if kept:
        out_meta["annotations"] = kept
    out = _object(obj, out_meta)
    spec = obj.get("spec") or {}
    out_spec: Obj = {}
    if spec.get("nodeName") is not None:
        out_spec["nodeName"] = _text(spec["nodeName"])
    if spec.get("restartPolicy") is not None:
        out_spec["restartPolicy"] = _text(spec["restartPolicy"])
    avoiding = observed.avoided_nodes(spec)
    if avoiding:
        field = {"key": observed.NODE_NAME_FIELD, "operator": "NotIn", "values": sorted(map(_text, avoiding))}
        terms = {"nodeSelectorTerms": [{"matchFields": [field]}]}
        out_spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}
    if out_spec:
        out["spec"] = out_spec
    status = _pod_status(obj.get("status") or {})
    if status:
        out["status"] = status
    return out


def carry_pod(old: Obj | None, new: Obj) -> Obj:
    """``new``, a pod's projection, with each regular container's end that a restart in place
    erased put back from ``old``, the projection cached before: the end ``old`` showed (the restart
    counted it) or had kept (it was carried already)."""
    statuses = (new.get("status") or {}).get("containerStatuses")
    before = {c.get("name"): c for c in ((old or {}).get("status") or {}).get("containerStatuses") or ()}
    if not statuses or not before:
        return new
    kept = [_carried(before.get(c.get("name")), c) for c in statuses]
    if all(k is c for k, c in zip(kept, statuses, strict=True)):
        return new
    return {**new, "status": {**new["status"], "containerStatuses": kept}}


def _carried(old: Obj | None, new: Obj) -> Obj:
    last = (new.get("lastState") or {}).get("terminated") or {}
    if old is None or last.get("reason") != observed.RESTARTED_IN_PLACE:
        return new
    count, was = new.get("restartCount", 0), old.get("restartCount", 0)
    if count > was:
        end = (old.get("state") or {}).get("terminated")
    elif count == was:
        end = (old.get("lastState") or {}).get("terminated")
    else:
        end = None
    if not end or end.get("reason") == observed.RESTARTED_IN_PLACE:
        return new
    return {**new, "lastState": {"terminated": end}}


def service(obj: Obj) -> Obj:
    return _object(obj, _identity(obj.get("metadata") or {}))


def config_map(obj: Obj) -> Obj:
    return _object(obj, _identity(obj.get("metadata") or {}))


def node(obj: Obj) -> Obj:
    """A node's identity, the keys of its taints, the types of its true conditions but Ready
    (what :class:`~.policies.avoid.Unhealthy` reads), without the heartbeat times, and whether it
    declares that its kubelet restarts pods in place."""
    meta = obj.get("metadata") or {}
    out_meta: Obj = {}
    for key in ("name", "uid", "resourceVersion"):
        _copy(out_meta, meta, key)
    out = _object(obj, out_meta)
    taints = [{"key": _intern(t["key"])} for t in (obj.get("spec") or {}).get("taints") or () if t.get("key")]
    if taints:
        out["spec"] = {"taints": taints}
    true = [
        {"type": _intern(c["type"]), "status": "True"}
        for c in (obj.get("status") or {}).get("conditions") or ()
        if c.get("status") == "True" and c.get("type") not in (None, "Ready")
    ]
    status: Obj = {"conditions": true} if true else {}
    if naming.IN_PLACE_FEATURE in ((obj.get("status") or {}).get("declaredFeatures") or ()):
        status["declaredFeatures"] = [naming.IN_PLACE_FEATURE]
    if status:
        out["status"] = status
    return out


def workload(obj: Obj) -> Obj:
    """A Kueue Workload's identity, generation and status, without its pod sets' templates (the
    job's own pods, which it has), which is all :class:`~.scheduling.workload.Seen` reads."""
    meta = obj.get("metadata") or {}
    out_meta = _identity(meta)
    _copy(out_meta, meta, "generation")
    out = _object(obj, out_meta)
    if "status" in obj:
        out["status"] = obj["status"]
    return out


def resource_flavor(obj: Obj) -> Obj:
    """A Kueue ResourceFlavor's name and the node labels and tolerations it gives pods."""
    meta = obj.get("metadata") or {}
    out = _object(obj, _identity(meta))
    spec = obj.get("spec") or {}
    out["spec"] = {k: spec[k] for k in ("nodeLabels", "tolerations") if k in spec}
    return out


def priority_class(obj: Obj) -> Obj:
    """A PriorityClass's name and value (Kueue orders a queued job's Workload by it)."""
    out = _object(obj, _identity(obj.get("metadata") or {}))
    out["value"] = obj.get("value") or 0
    return out


def training_job(obj: Obj) -> Obj:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    annotations = meta.get("annotations")
    if annotations and LAST_APPLIED in annotations:
        rest = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
        if rest:
            meta["annotations"] = rest
        else:
            del meta["annotations"]
    out: Obj = _interned({**obj, "metadata": meta})
    return out


# --- pieces --------------------------------------------------------------------------------


def _object(obj: Obj, meta: Obj) -> Obj:
    out: Obj = {}
    if "apiVersion" in obj:
        out["apiVersion"] = _text(obj["apiVersion"])
    if "kind" in obj:
        out["kind"] = _text(obj["kind"])
    out["metadata"] = meta
    return out


def _identity(meta: Mapping[str, Any]) -> Obj:
    """Name, namespace, uid, resourceVersion, deletion, labels and controlling owner."""
    out: Obj = {}
    _copy(out, meta, "name")
    _copy(out, meta, "namespace", _text)
    # Owners' UIDs are shared by their children's references: the objects' own are not.
    for key in ("uid", "resourceVersion", "deletionTimestamp"):
        _copy(out, meta, key)
    labels = meta.get("labels")
    if labels:
        out["labels"] = {_intern(k): _text(v) for k, v in labels.items()}
    owners = [_owner(ref) for ref in meta.get("ownerReferences") or () if ref.get("controller")]
    if owners:
        out["ownerReferences"] = owners
    return out


def _owner(ref: Mapping[str, Any]) -> Obj:
    out: Obj = {}
    for key in ("apiVersion", "kind", "name", "uid"):
        _copy(out, ref, key, _text)
    out["controller"] = ref["controller"]
    return out


def _pod_status(status: Mapping[str, Any]) -> Obj:
    out: Obj = {}
    _copy(out, status, "phase", _text)
    if status.get("reason"):
        out["reason"] = _text(status["reason"])
    # A malformed list is left out rather than raised: the informer must go on. Start times are
    # kept only in a pod with kubetrain's agent, which a hang is judged by (observed.Pod.hung_at).
    agent = observed.has_agent(status)
    for key in ("initContainerStatuses", "containerStatuses"):
        if status.get(key):
            out[key] = [_share(_container(c, timed=agent)) for c in status[key] if isinstance(c, Mapping)]
    if status.get("conditions"):
        out["conditions"] = [_share(_condition(c)) for c in status["conditions"] if isinstance(c, Mapping)]
    return out


def _container(c: Mapping[str, Any], *, timed: bool) -> Obj:
    out: Obj = {}
    _copy(out, c, "name", _text)
    _copy(out, c, "restartCount")
    state = c.get("state") or {}
    kept: Obj = {}
    if state.get("terminated"):
        kept["terminated"] = _terminated(state["terminated"], timed)
    reason = (state.get("waiting") or {}).get("reason")
    if reason:
        kept["waiting"] = {"reason": _text(reason)}
    if "running" in state:
        started = (state.get("running") or {}).get("startedAt") if timed else None
        kept["running"] = {"startedAt": started} if started else {}
    if kept:
        out["state"] = _RUNNING if kept == _RUNNING else kept
    last = (c.get("lastState") or {}).get("terminated")
    if last:
        out["lastState"] = {"terminated": _terminated(last, timed)}
    return out


def _terminated(t: Mapping[str, Any], timed: bool) -> Obj:
    # Never empty: an empty dict would read as "not terminated".
    out: Obj = {"exitCode": t.get("exitCode", 0)}
    if t.get("reason"):
        out["reason"] = _text(t["reason"])
    if timed and out["exitCode"] in (naming.HUNG_EXIT_CODE, naming.HELD_EXIT_CODE):
        for key in ("startedAt", "finishedAt"):
            _copy(out, t, key)
    if timed and out["exitCode"] == naming.HELD_EXIT_CODE:
        # Which word of the agent it is, and the attempt it speaks of (observed.Pod.held_signal).
        _copy(out, t, "containerID")
        _copy(out, t, "message", lambda m: str(m)[:16])
    return out


def _condition(c: Mapping[str, Any]) -> Obj:
    out: Obj = {}
    ctype, status = c.get("type"), c.get("status")
    _copy(out, c, "type", _text)
    _copy(out, c, "status", _text)
    if status == "True" and ctype in _DISRUPTIONS:
        _copy(out, c, "reason", _text)
    elif status == "False" and ctype == "PodScheduled":
        for key in ("reason", "message", "lastTransitionTime"):
            _copy(out, c, key)
    return out


def _interned(value: Any) -> Any:
    """``value`` rebuilt with its keys and short strings interned."""
    if isinstance(value, dict):
        return {_intern(k): _interned(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_interned(v) for v in value]
    return _text(value)


def _share(d: Obj) -> Obj:
    """The one stored dict equal to ``d``, if ``d`` holds only plain values."""
    try:
        # The type too: 1 and True are equal keys, and must not share.
        key = tuple((k, type(v), id(v) if v is _RUNNING else v) for k, v in d.items())
        found = _shared.get(key)
    except TypeError:  # a value that is not hashable
        return d
    if found is not None:
        return found
    if len(_shared) < _SHARED_MAX:
        _shared[key] = d
    return d


def _copy(out: Obj, source: Mapping[str, Any], key: str, value: Callable[[Any], Any] = lambda v: v) -> None:
    if key in source:
        out[key] = value(source[key])


def _text(value: Any) -> Any:
    """The interned string, for short strings (many objects share them); anything else as it is."""
    return _intern(value) if type(value) is str and len(value) <= _SHORT else value
