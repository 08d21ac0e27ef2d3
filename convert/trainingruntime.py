"""Kubeflow Trainer v2's ClusterTrainingRuntime and TrainingRuntime as kubetrain's runtimes.

A Trainer runtime (``trainer.kubeflow.org/v1alpha1``, as Trainer v2.0 to v2.3 wrote it) is an
ML policy and a JobSet template; kubetrain's (``training.kubetrain.dev/v1beta1``, of the same
kind and name) is a TrainingJob's spec as the jobs' defaults::

    Trainer runtime                           kubetrain runtime
    mlPolicy.torch                            framework pytorch
      numProcPerNode                            pytorch.nprocPerNode (auto: kubetrain's default)
      elasticPolicy {minNodes, maxNodes,        pytorch.elastic {minReplicas, maxReplicas,
        maxRestarts}                              maxRestarts}, network.hostNames PerReplica
    mlPolicy.mpi                              framework mpi
      numProcPerNode (more than 1)              options.slotsPerWorker
      mpiImplementation                         options.mpiImplementation
    mlPolicy.jax, mlPolicy.xgboost            framework jax, xgboost
    no framework in mlPolicy (plain ML)       framework generic
    mlPolicy.numNodes                         replicas of Worker (xgboost: a Master and
                                                numNodes - 1 Workers)
    replicatedJobs node, launcher             replicaSpecs Worker (xgboost: Master and Worker),
                                                Launcher; the pod template as written, its
                                                restartPolicy (JobSet's default: OnFailure) the
                                                replica's, where the framework's differs
    label trainjob-ancestor-step: trainer     trainer.commandReplicaTypes (and replicaType Worker)
    successPolicy {operator,                  successPolicy {operator, targets: the Jobs'
      targetReplicatedJobs}                     replica types}
    failurePolicy.maxRestarts                 runPolicy.backoffLimit
    podGroupPolicy.coscheduling               runPolicy.schedulingPolicy.scheduleTimeoutSeconds
      .scheduleTimeoutSeconds                   (kubetrain fails the job once it passes)
    label trainer.kubeflow.org/framework      label training.kubetrain.dev/framework

Not carried over, each with a warning: the dataset and model initializer Jobs; the JobSet's and
Jobs' own labels, annotations and fields (backoffLimit, parallelism of a launcher...); JobSet
failure rules, restart strategy, startup order, subdomain, TTL, volume claim policies;
``runLauncherAsNode`` (kubetrain's launcher hosts no ranks) and an ``sshAuthMountPath`` other
than ``/root/.ssh``; Volcano's network topology; a torch elastic policy's metrics. What
kubetrain's frameworks set differently from Trainer's plugins (MPI's hostfile path, JAX's
port and backend variables, XGBoost's worker count) is a warning at the Job it concerns.
``mlPolicy.flux`` is an error: kubetrain has no Flux framework.

The converted runtime is checked as admission would check it: it decodes, and a job made from
it alone is one its framework runs (:mod:`kubetrain.operator.intake`).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Any

import attrs

from kubetrain.api import podtemplate, v1beta1, validation, wire
from kubetrain.convert import kinds, reader, trainer
from kubetrain.operator import intake
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.frameworks import mpi, registry

__all__ = ["KINDS"]

# Trainer's mlPolicy sources, and the framework each becomes (flux has none).
SOURCES: Mapping[str, str | None] = {
    "torch": "pytorch",
    "mpi": "mpi",
    "jax": "jax",
    "xgboost": "xgboost",
    "flux": None,
}
PLAIN = "generic"
SSH_PATH = "/root/.ssh"
OLD_MOUNT = trainer.OLD_MOUNT
# JobSet's defaults (its webhook): a pod's restart policy, and success when every Job succeeds.
JOBSET_RESTART = v1beta1.RestartPolicy.ON_FAILURE.value
# Fields of a batch/v1 JobSpec beside its template: the Job JobSet made, which kubetrain does not.
_JOB_FIELDS = (
    "backoffLimit",
    "backoffLimitPerIndex",
    "maxFailedIndexes",
    "activeDeadlineSeconds",
    "ttlSecondsAfterFinished",
    "completionMode",
    "podFailurePolicy",
    "successPolicy",
    "suspend",
    "selector",
    "manualSelector",
    "podReplacementPolicy",
    "managedBy",
)
_NOT_A_JOB = "not carried over: kubetrain makes the pods itself, not a Job"
_JOBSET_FIELDS = {
    "suspend": "the job's own spec.runPolicy.suspend decides",
    "coordinator": "every pod gets the rank-0 host from its framework's env",
    "managedBy": "a job's own spec.managedBy says who manages it",
    "ttlSecondsAfterFinished": "it deleted the JobSet, not the TrainJob; a job's runPolicy.ttlSecondsAfterFinished "
    "deletes the job itself, and its cleanPodPolicy its pods",
    "volumeClaimPolicies": "kubetrain creates no PersistentVolumeClaims; name existing claims in the pod template",
}


class _Runtime:
    """One Trainer runtime being read."""

    def __init__(self, doc: reader.Reader, kind: str) -> None:
        self.doc, self.kind = doc, kind
        self.framework = PLAIN
        self.options: dict[str, Any] = {}
        self.nodes = 1
        self.elastic = False
        self.replicas: dict[str, dict[str, Any]] = {}
        self.paths: dict[str, validation.Path] = {}
        self.jobs: dict[str, tuple[str, ...]] = {}  # replicated Job -> its replica types
        self.templates: dict[str, validation.Path] = {}  # replica type -> its pod template's input path
        self.command: list[str] = []
        self.run_policy: dict[str, Any] = {}
        self.success: dict[str, Any] | None = None
        # A runtime of a name Trainer ships: its trainer's container is named as in kubetrain's,
        # which the jobs converted for that name override.
        self.shipped: trainer.Shipped | None = None

    @property
    def fw(self) -> fw_contract.Framework:
        return registry.default().get(self.framework)

    def note(self, path: tuple[Any, ...], message: str) -> None:
        self.doc.findings.note(path, message)

    # --- mlPolicy -------------------------------------------------------------------------------

    def ml_policy(self, ml: reader.Reader | None) -> None:
        if ml is None:
            self.note(("spec",), _PLAIN_NOTE)
            return
        nodes = ml.integer("numNodes", minimum=1)
        self.nodes = nodes or 1
        given = [(k, ml.child(k)) for k in SOURCES if ml.has(k)]
        given = [(k, r) for k, r in given if r is not None]
        if len(given) > 1:
            ml.error(f"only one of {', '.join(SOURCES)} may be given", given[1][0])
        source, policy = given[0] if given else (None, None)
        if source is None or policy is None:
            self.note(ml.path, _PLAIN_NOTE)
        elif SOURCES[source] is None:
            policy.error(
                "Flux has no kubetrain counterpart: convert a Flux runtime by hand (framework generic)"
            )
            policy.rest()
        elif source == "torch":
            self.framework = "pytorch"
            self._torch(policy, nodes)
        elif source == "mpi":
            self.framework = "mpi"
            self._mpi(policy)
        else:
            self.framework = str(SOURCES[source])
        if policy is not None:
            policy.finish()
        ml.finish()

    def _torch(self, t: reader.Reader, nodes: int | None) -> None:
        procs = trainer.procs_per_node(t, "numProcPerNode")
        if procs is not None:
            self.options["nprocPerNode"] = procs
        e = t.child("elasticPolicy")
        if e is None:
            return
        low = e.integer("minNodes", minimum=1) or 1
        high = e.integer("maxNodes", minimum=1) or max(low, nodes or 1)
        restarts = e.integer("maxRestarts", minimum=0)
        e.drop(
            "not carried over: kubetrain creates no HorizontalPodAutoscaler; scale the job's Workers "
            "(kubectl scale) between minReplicas and maxReplicas",
            "metrics",
        )
        e.finish()
        if low > high:
            e.error(f"minNodes ({low}) must not exceed maxNodes ({high})")
            return
        self.options["elastic"] = {"minReplicas": low, "maxReplicas": high}
        if restarts is not None:
            self.options["elastic"]["maxRestarts"] = restarts
        self.elastic, self.nodes = True, high
        self.note(
            e.path,
            f"carried over: kubetrain runs the job elastic, {low} to {high} Workers (starting with {high}); "
            "Trainer's torch plugin left elasticPolicy unimplemented and ran numNodes nodes",
        )

    def _mpi(self, m: reader.Reader) -> None:
        slots = m.integer("numProcPerNode", minimum=1)
        if slots is not None and slots > 1:
            # 1, Trainer's default, meant a slot per GPU if more than one: kubetrain's default too.
            self.options[mpi.SLOTS_OPTION] = slots
        implementation = m.text("mpiImplementation", choices=mpi.IMPLEMENTATIONS)
        if implementation is not None:
            self.options[mpi.IMPLEMENTATION_OPTION] = implementation
        mount = m.text("sshAuthMountPath")
        if mount and mount.rstrip("/") != SSH_PATH:
            m.note(
                f"not carried over: kubetrain mounts the job's ssh key at {SSH_PATH} and runs ssh as root",
                "sshAuthMountPath",
            )
        if m.truth("runLauncherAsNode"):
            m.note(
                "not carried over: kubetrain's Launcher hosts no ranks; numNodes counts the Workers that "
                "do, so a job of N nodes runs N Workers beside the Launcher (Trainer: N pods in all)",
                "runLauncherAsNode",
            )

    # --- podGroupPolicy -------------------------------------------------------------------------

    def pod_group(self, pg: reader.Reader) -> None:
        gang = "the gang itself is the operator's --gang-scheduler's (coscheduling, volcano or native), for every job"
        cos = pg.child("coscheduling")
        if cos is not None:
            timeout = cos.integer("scheduleTimeoutSeconds", minimum=0)
            cos.finish()
            if timeout is not None:
                # 0 was coscheduling's default, 60 seconds.
                self.run_policy["schedulingPolicy"] = {"scheduleTimeoutSeconds": timeout or 60}
                self.note(
                    cos.where("scheduleTimeoutSeconds"),
                    "carried over as spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds: kubetrain fails "
                    "the job (reason ScheduleTimeout) once its pods have been unschedulable this long, where "
                    f"coscheduling let the gang go and tried again; {gang}",
                )
            else:
                self.note(cos.path, f"carried over: {gang}")
        volcano = pg.child("volcano")
        if volcano is not None:
            volcano.drop(
                "not carried over: kubetrain's Volcano PodGroups have no network topology", "networkTopology"
            )
            volcano.finish()
            self.note(volcano.path, f"carried over: {gang}")
        pg.finish()

    # --- the JobSet template --------------------------------------------------------------------

    def template(self, tmpl: reader.Reader) -> None:
        tmpl.drop(
            "not carried over: labels and annotations of the JobSet, which kubetrain does not create",
            "metadata",
        )
        js = tmpl.child("spec")
        tmpl.finish()
        if js is None:
            tmpl.error("required: the JobSet spec", "spec")
            return
        jobs = js.items("replicatedJobs")
        if not jobs and js.take("replicatedJobs") in (None, []):
            js.error("required: the replicated Jobs, node among them", "replicatedJobs")
        for rj in jobs:
            self._replicated_job(rj)
        self._network(js.child("network"))
        self._success(js)
        self._failure(js.child("failurePolicy"))
        startup = js.child("startupPolicy")
        if startup is not None:
            order = startup.text("startupPolicyOrder", choices=("AnyOrder", "InOrder"))
            startup.finish()
            if order == "InOrder":
                self.note(
                    startup.path,
                    "not carried over: kubetrain creates every replica type at once, but MPI's Launcher, "
                    "once every Worker is Ready",
                )
        for field, why in _JOBSET_FIELDS.items():
            js.drop(f"not carried over: {why}", field)
        js.finish()
        self._env_notes()

    def _replicated_job(self, rj: reader.Reader) -> None:
        name = rj.text("name")
        types = trainer.types_of(name, self.framework) if name is not None else None
        if name is None or types is None:
            rj.error(
                "required: a replicated Job's name"
                if name is None
                else f"kubetrain has no replica type for "
                f"a Job {name!r}: it converts Trainer's {trainer.NODE} (Worker) and {trainer.LAUNCHER} "
                "(Launcher); the initializers are dropped",
                "name",
            )
            rj.rest()
            return
        if name in self.jobs:
            rj.error(f"a second Job {name}", "name")
        self.jobs[name] = types
        if not types:
            what = name.split("-")[0]
            self.note(
                rj.path,
                f"not carried over: kubetrain runs no {name} Job; a job made from this runtime fetches its "
                f"{what} itself (in the trainer, or an initContainer of spec.replicaSpecs.Worker.template)",
            )
            rj.rest()
            return
        replicas = rj.integer("replicas", minimum=0)
        if replicas not in (None, 1):
            rj.note("not carried over: Trainer ran one Job of it", "replicas")
        rj.drop("not carried over: kubetrain's pods are not grouped by Job", "groupName")
        self._depends(name, rj)
        job = rj.child("template")
        rj.finish()
        if job is None:
            rj.error("required: the Job template", "template")
            return
        ancestor = self._job_metadata(job.child("metadata"))
        if ancestor == trainer.TRAINER_STEP:
            self.command += [t for t in types if t not in self.command]
        spec = job.child("spec")
        job.finish()
        if spec is None:
            job.error("required: the Job spec", "spec")
            return
        pod = spec.take("template")
        for field in ("parallelism", "completions"):
            count = spec.integer(field, minimum=0)
            if name == trainer.LAUNCHER and count not in (None, 1):
                spec.note("not carried over: kubetrain runs one Launcher", field)
            # node's are Trainer's own: its plugins set them from numNodes.
        for field in _JOB_FIELDS:
            why = "; its restarts are runPolicy.backoffLimit's" if field == "backoffLimit" else ""
            spec.drop(f"{_NOT_A_JOB}{why}", field)
        spec.finish()
        if not isinstance(pod, Mapping):
            spec.error("required: the pod template" if pod is None else "expected an object", "template")
            return
        self._pods(name, types, copy.deepcopy(dict(pod)), spec.where("template"))

    def _depends(self, name: str, rj: reader.Reader) -> None:
        for d in rj.items("dependsOn"):
            other = d.text("name")
            status = d.text("status", choices=("Ready", "Complete"))
            d.finish()
            if (name, other, status) == (trainer.LAUNCHER, trainer.NODE, "Ready") and self.framework == "mpi":
                continue  # kubetrain's own order: the Launcher once every Worker is Ready
            why = (
                f"the {other} Job is not carried over"
                if other in trainer.INITIALIZERS
                else "kubetrain creates every replica type at once, but MPI's Launcher, once every Worker is Ready"
            )
            self.note(d.path, f"not carried over: {why}")

    def _job_metadata(self, m: reader.Reader | None) -> str | None:
        """The Job's trainjob-ancestor-step; its other labels and annotations are noted."""
        if m is None:
            return None
        labels = m.take("labels")
        ancestor = None
        if isinstance(labels, Mapping):
            ancestor = labels.get(trainer.ANCESTOR)
            if any(k != trainer.ANCESTOR for k in labels):
                self.note(
                    m.where("labels"), "not carried over: labels of the Job, which kubetrain does not create"
                )
        elif labels is not None:
            m.error("expected a map of strings", "labels")
        m.drop("not carried over: annotations of the Job, which kubetrain does not create", "annotations")
        m.finish()
        return ancestor if isinstance(ancestor, str) else None

    def _pods(self, name: str, types: tuple[str, ...], pod: dict[str, Any], at: tuple[Any, ...]) -> None:
        pod_spec = pod.get("spec")
        policy = pod_spec.pop("restartPolicy", None) if isinstance(pod_spec, dict) else None
        if policy is not None and policy not in ("Always", "OnFailure", "Never"):
            self.doc.findings.error(
                (*at, "spec", "restartPolicy"), f"must be Always, OnFailure or Never, got {policy!r}"
            )
        policy = policy or JOBSET_RESTART
        for f in podtemplate.errors(pod, at):
            self.doc.findings.error(f.path, f.message)
        kinds.rename_removed_resources(pod, at, self.note)
        if self.shipped is not None:
            self._rename(pod, at)
        for t in types:
            out: dict[str, Any] = {}
            if t == "Worker":
                out["replicas"] = self.nodes - 1 if self.framework == "xgboost" else self.nodes
            if policy != self.fw.restart_policy.value:
                out["restartPolicy"] = policy
            if self.framework == "mpi" and t == "Worker":
                self._ssh_port(pod, at, out)
            out["template"] = copy.deepcopy(pod)
            self.replicas[t] = out
            self.paths[t] = at[:-3]  # the replicated Job
            self.templates[t] = at
        if self.framework == "mpi":
            for t in types:
                self._old_mount(t, pod, at)

    def _ssh_port(self, pod: dict[str, Any], at: tuple[Any, ...], out: dict[str, Any]) -> None:
        """An MPI node's sshd port, where its readiness probe says it is not 22 (Trainer's DeepSpeed
        and MLX images listen on 2222): kubetrain's ssh config reaches a replica at its ``port``."""
        listed = pod["spec"].get("containers") if isinstance(pod.get("spec"), Mapping) else None
        if not isinstance(listed, list) or not listed:
            return
        named = [c for c in listed if isinstance(c, Mapping) and c.get("name") == self.fw.container]
        main = named[0] if named else listed[0]
        probe = main.get("readinessProbe") if isinstance(main, Mapping) else None
        socket = probe.get("tcpSocket") if isinstance(probe, Mapping) else None
        port = socket.get("port") if isinstance(socket, Mapping) else None
        if (
            isinstance(port, int)
            and not isinstance(port, bool)
            and port != mpi.SSH_PORT
            and 1 <= port <= 65535
        ):
            out["port"] = port
            i = listed.index(main)
            self.note(
                (*at, "spec", "containers", i, "readinessProbe", "tcpSocket", "port"),
                f"carried over as the Worker's port: sshd listens on {port}, and kubetrain's ssh config "
                "reaches each Worker at its port",
            )

    def _rename(self, pod: dict[str, Any], at: tuple[Any, ...]) -> None:
        listed = pod["spec"].get("containers") if isinstance(pod.get("spec"), Mapping) else None
        for i, c in enumerate(listed if isinstance(listed, list) else []):
            if isinstance(c, dict) and c.get("name") in (trainer.NODE, trainer.LAUNCHER):
                c["name"] = self.fw.container
                self.note(
                    (*at, "spec", "containers", i, "name"),
                    f"becomes {self.fw.container}, as in kubetrain's runtimes, whose name this one has: the "
                    "jobs converted for it name that container",
                )

    def _old_mount(self, t: str, pod: dict[str, Any], at: tuple[Any, ...]) -> None:
        listed = (pod.get("spec") or {}).get("containers") if isinstance(pod.get("spec"), Mapping) else None
        for i, c in enumerate(listed if isinstance(listed, list) else []):
            for field in ("command", "args"):
                words = c.get(field) if isinstance(c, Mapping) else None
                if isinstance(words, list) and any(OLD_MOUNT in str(w) for w in words):
                    self.note(
                        (*at, "spec", "containers", i, field),
                        f"refers to {OLD_MOUNT}: kubetrain mounts the hostfile at {fw_contract.CONFIG_MOUNT}",
                    )

    def _network(self, n: reader.Reader | None) -> None:
        if n is None:
            return
        if n.truth("enableDNSHostnames") is False:
            n.note("not carried over: kubetrain gives every pod a host name", "enableDNSHostnames")
        if n.text("subdomain"):
            n.note(
                "not carried over: a job's hosts are {job}-{type}-{index}.{job}.{namespace}.svc "
                "(network.hostNames PerJob), in a subdomain named after the job",
                "subdomain",
            )
        if n.truth("publishNotReadyAddresses") is False:
            n.note(
                "not carried over: kubetrain's Services publish pods before they are Ready",
                "publishNotReadyAddresses",
            )
        n.finish()

    def _success(self, js: reader.Reader) -> None:
        sp = js.child("successPolicy")
        if sp is None:
            if self.framework in ("mpi", "xgboost"):
                who = "Launcher" if self.framework == "mpi" else "Master"
                js.note(
                    f"no successPolicy: JobSet waited for every Job, kubetrain's {self.framework} succeeds when its "
                    f"{who} does",
                )
            return
        operator = sp.text("operator", choices=("All", "Any"), default="All")
        names = sp.take("targetReplicatedJobs")
        sp.finish()
        if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) for n in names)):
            sp.error("expected a list of replicated Job names", "targetReplicatedJobs")
            return
        targets: list[str] = []
        for i, n in enumerate(names or list(self.jobs)):
            if n not in self.jobs:
                sp.findings.error((*sp.where("targetReplicatedJobs"), i), f"no replicated Job {n}")
            elif not self.jobs[n]:
                sp.findings.note(
                    (*sp.where("targetReplicatedJobs"), i), f"not carried over: the {n} Job is not"
                )
            targets += [t for t in self.jobs.get(n, ()) if t not in targets]
        if targets:
            self.success = {"operator": operator, "targets": [{"replicaType": t} for t in targets]}

    def _failure(self, fp: reader.Reader | None) -> None:
        if fp is None:
            return
        restarts = fp.integer("maxRestarts", minimum=0)
        if restarts is not None:
            self.run_policy["backoffLimit"] = restarts
            fp.note(
                "carried over as spec.runPolicy.backoffLimit: the restarts the program's failures may cause; "
                "evictions, preemptions and lost nodes restart the job from a budget of their own",
                "maxRestarts",
            )
        fp.drop("not carried over: kubetrain restarts by its failurePolicy.restartMethod", "restartStrategy")
        fp.drop(
            "not carried over: JobSet's rules match the child Jobs' failure reasons; kubetrain's "
            "failurePolicy.rules match the pods' exit codes, reasons and conditions",
            "rules",
        )
        fp.finish()

    def _env_notes(self) -> None:
        """What Trainer's plugin set that kubetrain's framework sets otherwise, at the Job it concerns."""
        if self.framework == "mpi" and "Launcher" in self.paths:
            at = self.paths["Launcher"]
            self.note(
                at, f"OMPI_MCA_orte_default_hostfile is {mpi.HOSTFILE} (Trainer's: {OLD_MOUNT}/hostfile)"
            )
            self.note(
                at,
                "kubetrain does not set OMPI_MCA_plm_rsh_args, OMPI_MCA_orte_set_default_slots: kubetrain's ssh "
                "config retries connections itself; the hostfile gives each worker its slots",
            )
        if self.framework == "jax" and "Worker" in self.paths:
            self.note(
                self.paths["Worker"],
                "kubetrain does not set JAX_COORDINATOR_PORT (JAX_COORDINATOR_ADDRESS holds the port, as does "
                "COORDINATOR_PORT) nor JAX_DISTRIBUTED_BACKEND (Trainer's: gloo)",
            )
        if self.framework == "xgboost" and "Worker" in self.paths:
            self.note(
                self.paths["Worker"],
                "node 0 is kubetrain's Master (the tracker, rank 0) and the others Workers: a job of N nodes says "
                "numNodes N - 1 (kubetrain convert writes so for jobs of xgboost-distributed); DMLC_NUM_WORKER "
                "counts the pods, where Trainer counted a worker per GPU",
            )

    def source(self, path: validation.Path) -> validation.Path:
        """Where a field of the converted runtime came from in the input, as near as it can say."""
        if path[:2] == ("spec", "replicaSpecs") and len(path) > 2 and path[2] in self.templates:
            at = self.templates[str(path[2])]
            return (*at, *path[4:]) if path[3:4] == ("template",) else at[:-3]
        return path

    # --- the result -----------------------------------------------------------------------------

    def spec(self) -> dict[str, Any]:
        framework: dict[str, Any] = {"name": self.framework}
        if self.options:
            framework["pytorch" if self.framework == "pytorch" else "options"] = self.options
        out: dict[str, Any] = {"framework": framework}
        order = self.fw.order(self.replicas)
        out["replicaSpecs"] = {t: self.replicas[t] for t in order}
        if self.run_policy:
            out["runPolicy"] = self.run_policy
        if self.success is not None:
            out["successPolicy"] = self.success
        if self.elastic:
            out["network"] = {"hostNames": v1beta1.HostNames.PER_REPLICA.value}
        if "Worker" in self.replicas:
            policy: dict[str, Any] = {"replicaType": "Worker"}
            if self.command:
                policy["commandReplicaTypes"] = [t for t in order if t in self.command]
            out["trainer"] = policy
        return out


_PLAIN_NOTE = (
    "no torch, mpi, jax or xgboost policy (Trainer's plain ML): kubetrain's generic framework, whose pods "
    "get KUBETRAIN_RANK and KUBETRAIN_WORLD_SIZE"
)


def _runtime(doc: reader.Reader, *, kind: str) -> dict[str, Any]:
    meta, spec = kinds.opening(doc)
    if spec is None or not trainer.whole(doc, "spec"):
        return {}
    r = _Runtime(doc, kind)
    name = meta.get("name")
    r.shipped = (
        trainer.SHIPPED.get(name) if isinstance(name, str) and kind == v1beta1.RuntimeKind.CLUSTER else None
    )
    r.ml_policy(spec.child("mlPolicy"))
    pg = spec.child("podGroupPolicy")
    if pg is not None:
        r.pod_group(pg)
    template = spec.child("template")
    if template is None:
        spec.error("required: the JobSet template", "template")
    else:
        r.template(template)
    spec.finish()
    _labels(doc, meta, r)
    out = {"apiVersion": kinds.API_VERSION, "kind": kind, "metadata": meta, "spec": r.spec()}
    if not doc.findings.errors:
        _check(r, out)
    return out


def _labels(doc: reader.Reader, meta: dict[str, Any], r: _Runtime) -> None:
    """Trainer's framework label as kubetrain's, naming the runtime's framework; Trainer's other
    labels noted and dropped."""
    labels = meta.get("labels")
    if isinstance(labels, dict):
        out: dict[str, Any] = {}
        for key, value in labels.items():
            at = ("metadata", "labels", key)
            if key == trainer.FRAMEWORK_LABEL:
                out[v1beta1.runtime_types.FRAMEWORK_LABEL] = r.framework
                if trainer.FRAMEWORK_ALIASES.get(str(value), value) != r.framework:
                    doc.findings.note(
                        at, f"becomes {r.framework}: kubetrain's label names the runtime's framework"
                    )
            elif isinstance(key, str) and key.startswith(f"{trainer.GROUP}/"):
                doc.findings.note(at, "not carried over: a label of Trainer's own")
            else:
                out[key] = value
        meta["labels"] = out
        if not out:
            del meta["labels"]
    shipped, name = r.shipped, meta.get("name")
    if shipped is not None and shipped.name == name:
        doc.findings.note(
            ("metadata", "name"),
            f"kubetrain ships a {r.kind} {name}: this one replaces it for every job that names it",
        )
    elif shipped is not None:
        doc.findings.note(
            ("metadata", "name"),
            f"kubetrain convert writes a TrainJob that names {name} as one that names kubetrain's "
            f"{shipped.name}: name this runtime in its runtimeRef to use this one",
        )


def _check(r: _Runtime, out: dict[str, Any]) -> None:
    """The converted runtime decodes, and a job made from it alone is one its framework runs; an
    error is said at the input's field it came from."""
    kind = out["kind"]
    cls = v1beta1.ClusterTrainingRuntime if kind == v1beta1.RuntimeKind.CLUSTER else v1beta1.TrainingRuntime
    found: list[validation.FieldError] = []
    try:
        wire.structure(out, cls)
    except validation.ValidationError as e:
        found = [attrs.evolve(f, message=f"{f.message} (in the converted {kind})") for f in e.errors]
    if not found:
        spec = {k: v for k, v in out["spec"].items() if k not in ("trainer", "accelerators", "runtimeRef")}
        job = {
            "apiVersion": v1beta1.API_VERSION,
            "kind": v1beta1.KIND,
            "metadata": {"name": "runtime"},
            "spec": spec,
        }
        try:
            intake.decode(job)
        except validation.ValidationError as e:
            found = [
                attrs.evolve(f, message=f"{f.message} (in a job made from the converted {kind})")
                for f in e.errors
            ]
    for f in found:
        r.doc.findings.error(r.source(f.path), f.message)


KINDS: tuple[kinds.Kind, ...] = tuple(
    kinds.Kind(
        kind=k.value, api_versions=(trainer.API_VERSION,), to_job=functools.partial(_runtime, kind=k.value)
    )
    for k in v1beta1.RuntimeKind
)
