"""What one rendered pod becomes on this machine: a command, its env, its folders — or why not.

The local runner renders a job's pods with :func:`kubetrain.operator.render.render` (every
replica at 127.0.0.1 and a port of its own: :mod:`.machine`) and runs each pod's **main
container** as one process. :func:`launch` reads the pod and says how, as a :class:`Launch`;
what cannot run is a :class:`NotRunnableError` with one line per reason, found before any process starts.

The rules (docs/usage.md, "Try it locally"):

- **Command.** The main container's ``command`` then ``args``, ``$(VAR)`` expanded from its env as
  the kubelet expands them; the image is not pulled, so the programs are this machine's (found on
  ``PATH``, else refused: ``mpirun`` or ``torchrun`` missing). A container without ``command``
  would run its image's entrypoint: refused.
- **Env.** This process's environment, then the pod's env in order (``$(VAR)`` expanded, and
  ``valueFrom`` the pod's own name, namespace, IP (127.0.0.1), node, labels and annotations;
  a Secret's or ConfigMap's key only the cluster has is refused).
- **Folders.** Everything of a run is under its run directory (``.kubetrain/run/<job>/`` by
  default): each pod has ``pods/<pod>/``. A volume is a local folder: ``emptyDir`` —
  ``pods/<pod>/volumes/<volume>/``, emptied when the pod is made again; a claim
  (``persistentVolumeClaim``) — ``claims/<claim>/``, shared by every replica as a volume several
  pods mount is; ``hostPath`` — its own path; kubetrain's ConfigMap and ssh Secret — their files
  in ``pods/<pod>/volumes/<volume>/``, as is a ``downwardAPI`` volume's (the pod's own fields, as
  this machine knows them). Any other volume is refused. A path under a mount in an
  env value, an argument, or after the ``=`` of one (``--checkpoint=/ckpt/step``), is given as
  that folder's path.
- **Working directory.** ``workingDir`` if this machine has it (a path under a mount: its
  folder); none given: the directory ``kubetrain run`` started in, so ``python train.py``
  finds ``train.py``; a ``workingDir`` this machine does not have is refused.
- **Other containers.** kubetrain's own agent is played by the runner (hangs, progress). Any
  other container — an init container, a sidecar, a second container — is refused, or, with
  ``skip_extra``, left out with a warning.
- **Ranks started by a launcher.** In a framework whose launcher starts every rank (MPI's
  Launcher, Chainer's Master run ``mpirun``), the other replicas only serve ssh; on one machine
  ``mpirun`` starts every rank here, so they run no process: each is a pod that runs, ready,
  until it is stopped (:attr:`Launch.stand_in`). Its ranks run under the launcher, so its volumes
  are the launcher's folders: the progress file its first rank writes is the launcher's.
"""

from __future__ import annotations

import base64
import os
import pathlib
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from kubetrain.api import naming, v1beta1
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.local import machine as machine_

__all__ = ["Launch", "NotRunnableError", "launch", "run_dir"]

Object = dict[str, Any]
# How long a stopped process has after SIGTERM when the template says nothing (the kubelet's).
DEFAULT_GRACE_SECONDS = 30.0


class NotRunnableError(ValueError):
    """What cannot run locally: one line per reason."""

    def __init__(self, lines: Sequence[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = tuple(lines)


@attrs.frozen(kw_only=True)
class Launch:
    """One pod as a process."""

    pod: str
    replica: str  # as logs tag it: worker-1
    replica_type: str  # as labelled: lower case
    index: int
    attempt: int
    container: str
    argv: tuple[str, ...]  # empty: a stand-in, which runs no process
    env: Mapping[str, str]
    cwd: str
    root: str  # the pod's folder
    files: tuple[tuple[str, str, int], ...] = ()  # (path, text, mode), written before it starts
    empty: tuple[str, ...] = ()  # folders made empty when the pod is made
    folders: tuple[str, ...] = ()  # folders that must be there
    restart_policy: str = "Never"  # the pod's: Always, OnFailure, Never
    grace: float = DEFAULT_GRACE_SECONDS
    # The local path of KUBETRAIN_PROGRESS_FILE, where the pod has kubetrain's agent.
    progress_file: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def stand_in(self) -> bool:
        return not self.argv


def run_dir(base: pathlib.Path | str, job: v1beta1.TrainingJob) -> pathlib.Path:
    """``<base>/<namespace>/<job>``, or ``<base>/<job>`` in namespace ``default``."""
    name = job.metadata.name or "job"
    ns = job.metadata.namespace or "default"
    return pathlib.Path(base) / name if ns == "default" else pathlib.Path(base) / ns / name


def launch(
    pod: Object,
    objects: Sequence[Object],
    fw: fw_contract.Framework,
    *,
    root: pathlib.Path,
    environ: Mapping[str, str],
    cwd: str,
    skip_extra: bool = False,
    spelled: Mapping[str, str] | None = None,
    which: Callable[[str, str | None], str | None] = lambda cmd, path: shutil.which(cmd, path=path),
) -> Launch:
    """The pod ``pod`` of the rendered ``objects`` as a process, its folders under ``root`` (the
    run directory); :class:`NotRunnableError` with every reason it cannot run here. ``spelled``: the
    job's replica types by their lower-case labels, for messages."""
    meta, spec = pod["metadata"], pod["spec"]
    labels = meta.get("labels") or {}
    rtype, index = labels.get(naming.REPLICA_TYPE, ""), int(labels.get(naming.REPLICA_INDEX, "0"))
    who = f"{(spelled or {}).get(rtype, rtype)}/{index}"
    main = fw_contract.main_container(pod, fw.container)
    assert main is not None, "rendered pods have a main container"
    problems: list[str] = []
    warnings: list[str] = []
    for kind, c in _others(spec, main):
        line = f"{who}: {kind} {c.get('name')!r} cannot run locally: only each replica's main container runs"
        if skip_extra:
            warnings.append(f"{line}; left out (--skip-extra-containers)")
        else:
            problems.append(f"{line} (remove it, or pass --skip-extra-containers to leave it out)")
    pod_root = root / "pods" / meta["name"]
    launcher = fw.rank_launcher
    stand_in = launcher is not None and not _matches(labels.get(naming.REPLICA_TYPE, ""), launcher)
    # A stand-in's ranks run under its launcher's mpirun: its volumes are the launcher's (the
    # progress file its first rank writes, which the agent of the stand-in reads).
    volumes_root = _launcher_root(root, meta, launcher, spelled) if stand_in and launcher else pod_root
    fields = {
        "metadata.name": meta["name"],
        "metadata.namespace": meta.get("namespace") or "default",
        "status.podIP": machine_.HOST,
        "status.hostIP": machine_.HOST,
        "spec.nodeName": "localhost",
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        **{f"metadata.labels['{k}']": v for k, v in labels.items()},
        **{f"metadata.annotations['{k}']": v for k, v in (meta.get("annotations") or {}).items()},
    }
    mounts, files, empty, folders = _volumes(who, spec, main, objects, root, volumes_root, fields, problems)
    if stand_in:
        folders, empty, files = [*folders, *empty], [], []  # the launcher's own, made with it
    own: dict[str, str] = {}
    for var in main.get("env") or []:
        value = _value(who, var, fields, own, problems)
        if value is not None:
            own[var["name"]] = _local(value, mounts)
    argv: tuple[str, ...] = ()
    if not stand_in:
        words = [*(main.get("command") or []), *(main.get("args") or [])]
        if not main.get("command"):
            problems.append(
                f"{who}: container {main.get('name')!r} has no command: its image's entrypoint would run, "
                "and a local run pulls no image (give the container a command)"
            )
        else:
            argv = tuple(_local(_expand(w, own), mounts) for w in words)
            path = own.get("PATH", environ.get("PATH"))
            if "/" not in argv[0] and which(argv[0], path) is None:
                problems.append(f"{who}: {argv[0]}: command not found on this machine's PATH")
            elif "/" in argv[0] and not os.access(_at(argv[0], cwd), os.X_OK):
                problems.append(f"{who}: {argv[0]}: no such program on this machine")
    workdir = main.get("workingDir")
    here = cwd
    if workdir:
        local = _local(workdir, mounts)
        if local != workdir or pathlib.Path(local).is_dir():
            here = local
        else:
            problems.append(
                f"{who}: workingDir {workdir} is not a folder on this machine (a local run uses the image's "
                "paths only where this machine has them: leave workingDir out to run where kubetrain run starts)"
            )
    if problems:
        raise NotRunnableError(problems)
    progress_file = own.get(naming.PROGRESS_FILE_ENV) if _has_agent(spec) else None
    return Launch(
        pod=meta["name"],
        replica=f"{rtype}-{index}",
        replica_type=rtype,
        index=index,
        attempt=int(labels.get(naming.ATTEMPT, "0")),
        container=main["name"],
        argv=argv,
        env={**environ, **own},
        cwd=here,
        root=str(pod_root),
        files=tuple(files),
        empty=tuple(empty),
        folders=tuple(folders),
        restart_policy=spec.get("restartPolicy", "Always"),
        grace=float(spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)),
        progress_file=progress_file,
        warnings=tuple(warnings),
    )


def _matches(lower: str, pattern: str) -> bool:
    return fw_contract.ReplicaType(name=pattern).matches(lower)


def _launcher_root(
    root: pathlib.Path, meta: Mapping[str, Any], launcher: str, spelled: Mapping[str, str] | None
) -> pathlib.Path:
    """The folder of the job's rank launcher's pod (index 0 of the type ``launcher`` names)."""
    job = (meta.get("labels") or {}).get(naming.JOB_NAME, "")
    key = next((k for k in (spelled or {}).values() if _matches(k.lower(), launcher)), launcher)
    return root / "pods" / naming.replica_name(job, key, 0)


def _others(spec: Object, main: Object) -> list[tuple[str, Object]]:
    """Every container but the main one and kubetrain's agent, with what it is."""
    found: list[tuple[str, Object]] = []
    for c in spec.get("initContainers") or []:
        if c.get("name") in (naming.AGENT, naming.BARRIER):
            continue
        found.append(("sidecar" if c.get("restartPolicy") == "Always" else "init container", c))
    found += [("container", c) for c in spec.get("containers") or [] if c is not main]
    return found


def _has_agent(spec: Object) -> bool:
    return any(c.get("name") == naming.AGENT for c in spec.get("initContainers") or [])


def _volumes(
    who: str,
    spec: Object,
    main: Object,
    objects: Sequence[Object],
    root: pathlib.Path,
    pod_root: pathlib.Path,
    fields: Mapping[str, str],
    problems: list[str],
) -> tuple[dict[str, str], list[tuple[str, str, int]], list[str], list[str]]:
    """Each mount path of the main container -> its local folder; the files to write, the folders
    to empty and those that must be there."""
    volumes = {v.get("name"): v for v in spec.get("volumes") or []}
    mounts: dict[str, str] = {}
    files: list[tuple[str, str, int]] = []
    empty: list[str] = []
    folders: list[str] = []
    for vm in main.get("volumeMounts") or []:
        name, path = vm.get("name"), vm.get("mountPath", "")
        volume = volumes.get(name) or {}
        own = pod_root / "volumes" / str(name)
        if "emptyDir" in volume:
            local = str(own)
            empty.append(local)
        elif "persistentVolumeClaim" in volume:
            local = str(root / "claims" / str(volume["persistentVolumeClaim"].get("claimName")))
            folders.append(local)
        elif "hostPath" in volume:
            local = str(volume["hostPath"].get("path"))
            folders.append(local)
        elif "downwardAPI" in volume:
            # The pod's own fields, as the kubelet projects them (what this machine knows of them).
            local = str(own)
            empty.append(local)
            for item in volume["downwardAPI"].get("items") or []:
                field = str((item.get("fieldRef") or {}).get("fieldPath"))
                files.append((str(own / item.get("path", "")), fields.get(field, ""), 0o644))
        elif (data := _rendered(volume, objects)) is not None:
            local = str(own)
            empty.append(local)
            mode = int((volume.get("configMap") or volume.get("secret") or {}).get("defaultMode", 0o644))
            files += [(str(own / key), text, mode) for key, text in data.items()]
        else:
            kind = next((k for k in volume if k != "name"), "unknown")
            problems.append(
                f"{who}: volume {name!r} ({kind}) has no local folder: a local run maps emptyDir, "
                "persistentVolumeClaim, hostPath, downwardAPI and kubetrain's own ConfigMap and Secret"
            )
            continue
        if vm.get("subPath"):
            local = str(pathlib.Path(local) / vm["subPath"])
            folders.append(local)
        mounts[path.rstrip("/") or "/"] = local
    return mounts, files, empty, folders


def _rendered(volume: Object, objects: Sequence[Object]) -> dict[str, str] | None:
    """The files of a ConfigMap or Secret volume whose object the render made (kubetrain's own)."""
    for key, kind, field in (("configMap", "ConfigMap", "name"), ("secret", "Secret", "secretName")):
        if key not in volume:
            continue
        name = volume[key].get(field)
        for o in objects:
            if o["kind"] == kind and o["metadata"]["name"] == name:
                data = o.get("data") or {}
                if kind == "Secret":
                    return {k: base64.b64decode(v).decode() for k, v in data.items()}
                return dict(data)
    return None


def _value(
    who: str, var: Object, fields: Mapping[str, str], env: Mapping[str, str], problems: list[str]
) -> str | None:
    """A variable's value as the kubelet gives it, where this machine knows it."""
    if "valueFrom" not in var:
        return _expand(str(var.get("value", "")), env)
    source = var["valueFrom"] or {}
    path = str((source.get("fieldRef") or {}).get("fieldPath"))
    if path in fields:
        return fields[path]
    what = next(iter(source), "valueFrom")
    problems.append(
        f"{who}: env {var.get('name')}: valueFrom {what} {_named(source.get(what))}cannot be read "
        "without a cluster (give it a value)"
    )
    return None


def _named(ref: Any) -> str:
    if isinstance(ref, Mapping) and ref.get("name"):
        return f"({ref['name']}) "
    return ""


_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def _expand(text: str, env: Mapping[str, str]) -> str:
    """``$(NAME)`` replaced by ``env``'s value as the kubelet does: ``$$`` is ``$``, and a name not
    set is left as written."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)

    return _REFERENCE.sub(sub, text)


def _local(value: str, mounts: Mapping[str, str]) -> str:
    """``value`` with a path under a mount (all of it, or what follows its first ``=``) given as
    the mount's local folder."""
    head, eq, tail = value.partition("=")
    if eq and tail.startswith("/"):
        return head + eq + _path(tail, mounts)
    return _path(value, mounts) if value.startswith("/") else value


def _path(path: str, mounts: Mapping[str, str]) -> str:
    for mount in sorted(mounts, key=len, reverse=True):
        if path == mount or path.startswith(mount.rstrip("/") + "/"):
            return mounts[mount] + path[len(mount.rstrip("/")) :]
    return path


def _at(program: str, cwd: str) -> str:
    return program if os.path.isabs(program) else os.path.join(cwd, program)
