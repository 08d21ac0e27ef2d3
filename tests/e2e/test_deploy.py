"""Deployed as a user deploys it: `kustomize build config/default`, on a cluster of its own.

The manager runs as a local process holding the Deployment's ServiceAccount token, so
RBAC is exercised for real, and serves the conversion and validating webhooks over TLS
with a CA it makes itself (``--webhook-self-signed``). The apiserver cannot reach a
local process through the webhook Service, so the test points the CRD and the webhook
configuration at ``https://127.0.0.1:<port>`` instead — the one change from the overlay.
The apiserver writes an audit log of the manager's requests: the least-privilege test
compares it with the Role.
"""

from __future__ import annotations

import copy
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit import operator, strategies, walk
from testkit.jobs import RESOURCE, SAMPLES, finish, pods, running_pods, wait_state
from testkit.kube import eventually

from kubetrain.api import crd, exact, scheme, validation
from kubetrain.devcluster import cluster as devcluster
from kubetrain.devcluster import deploy, kwok, process
from kubetrain.operator import expansion

ROOT = pathlib.Path(__file__).resolve().parents[2]
GROUP = "training.kubetrain.dev"
SHORT = SAMPLES / "short"
NAMESPACE = deploy.NAMESPACE
SERVICE_ACCOUNT = f"system:serviceaccount:{NAMESPACE}:kubetrain-controller-manager"
ALPHA = "trainingjobs.v1alpha1.training.kubetrain.dev"
AUDIT_POLICY = f"""
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: ["{SERVICE_ACCOUNT}"]
- level: None
"""
# What cert-manager and the Prometheus Operator would have installed: just enough schema for
# the server-side dry run to accept their objects.
STUB_CRDS = [
    ("cert-manager.io", "Certificate", "certificates"),
    ("cert-manager.io", "Issuer", "issuers"),
    ("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
]


class Deployment:
    def __init__(
        self, c: devcluster.Cluster, audit_log: pathlib.Path, manager: process.Process, dry_run: str
    ) -> None:
        self.cluster, self.audit_log, self.manager, self.dry_run = c, audit_log, manager, dry_run

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return self.cluster.kubectl(*args, input=input, check=check)


def stub_crd(group: str, kind: str, plural: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def deployed() -> Iterator[Deployment]:
    work = pathlib.Path(tempfile.mkdtemp(prefix="kubetrain-deploy-"))
    (work / "audit-policy.yaml").write_text(AUDIT_POLICY)
    audit_log = work / "audit.log"
    c = devcluster.start(
        devcluster.Tier.CLUSTER,
        nodes=2,
        apiserver_args=(f"--audit-policy-file={work / 'audit-policy.yaml'}", f"--audit-log-path={audit_log}"),
    )
    try:
        for group, kind, plural in STUB_CRDS:
            c.kubectl("apply", "-f", "-", input=json.dumps(stub_crd(group, kind, plural)))
        c.kubectl("create", "namespace", NAMESPACE)
        manifest = deploy.overlay(c, ROOT / "config")
        # The shipped runtimes' kinds are defined by the overlay itself: they come after its CRDs.
        first, _ = deploy.phases(list(yaml.safe_load_all(manifest)))
        dry_run = c.kubectl(
            "apply", "--server-side", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(first)
        ).stdout
        deploy.apply(c, manifest, optional=True)
        port = process.free_port()
        deploy.point_webhooks_at(c, f"https://127.0.0.1:{port}")
        kubeconfig = deploy.service_account_kubeconfig(c, work / "manager.kubeconfig")
        manager = operator.start(c, None, *deploy.manager_flags(kubeconfig, work / "certs", port))
        eventually(
            "TrainingJobs to be served through the conversion webhook",
            lambda: c.kubectl("get", ALPHA, "-A", check=False).returncode == 0,
            timeout=60,
        )
        deploy.wait_defaults_given(c)
        yield Deployment(c, audit_log, manager, dry_run)
        manager.stop()
    finally:
        c.stop()
        shutil.rmtree(work, ignore_errors=True)


def namespace(d: Deployment, name: str) -> str:
    d.kubectl("create", "namespace", name)
    d.cluster.kubectl("wait", "--for=create", "--timeout=60s", "serviceaccount/default", "-n", name)
    return name


def get(d: Deployment, resource: str, ns: str, name: str) -> dict[str, Any]:
    return dict(json.loads(d.kubectl("get", resource, name, "-n", ns, "-o", "json").stdout))


# --- the overlay -----------------------------------------------------------------------------


def test_the_overlay_is_accepted_by_a_server_side_dry_run_and_wires_cert_manager(
    deployed: Deployment,
) -> None:
    manifest = deploy.overlay(deployed.cluster, ROOT / "config")
    objects = list(yaml.safe_load_all(manifest))
    first, runtimes = deploy.phases(objects)
    # The fixture's server-side dry run, before anything was applied: every object accepted; and
    # the shipped runtimes, applied once their CRDs were there, are all stored.
    assert deployed.dry_run.count("(server dry run)") == len(first)
    stored = deployed.kubectl("get", "clustertrainingruntimes", "-o", "name").stdout.split()
    assert sorted(stored) == sorted(
        f"clustertrainingruntime.{GROUP}/{o['metadata']['name']}" for o in runtimes
    )
    assert len(runtimes) >= 11
    by_kind = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    current = by_kind[("CustomResourceDefinition", "trainingjobs.training.kubetrain.dev")]
    assert (
        current["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
        == f"{NAMESPACE}/kubetrain-serving-cert"
    )
    assert current["spec"]["conversion"]["webhook"]["clientConfig"]["service"] == {
        "name": "kubetrain-webhook-service",
        "namespace": NAMESPACE,
        "path": "/convert",
    }
    cert = by_kind[("Certificate", "kubetrain-serving-cert")]
    assert cert["spec"]["dnsNames"][0] == f"kubetrain-webhook-service.{NAMESPACE}.svc"
    manager = by_kind[("Deployment", "kubetrain-controller-manager")]["spec"]["template"]["spec"]
    (container,) = manager["containers"]
    assert manager["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert {"livenessProbe", "readinessProbe", "resources"} <= set(container)
    assert all(o["metadata"].get("namespace") in (None, NAMESPACE) for o in objects)


# --- running jobs ------------------------------------------------------------------------------


@pytest.mark.parametrize("sample", sorted(p.name for p in (SAMPLES.parent / "v1alpha1").glob("*.yaml")))
def test_the_legacy_samples_run_through_the_deployed_manager(deployed: Deployment, sample: str) -> None:
    ns = namespace(deployed, f"legacy-{sample.split('-')[0]}")
    job = yaml.safe_load((SAMPLES.parent / "v1alpha1" / sample).read_text())
    deployed.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(job))
    name = job["metadata"]["name"]
    hub = scheme.to_hub(scheme.decode(job))
    running_pods(deployed.cluster, ns, name, sum(r.replicas for r in hub.spec.replica_specs.values()))
    wait_state(deployed.cluster, ns, name, "Running")
    alpha = get(deployed, ALPHA, ns, name)
    assert alpha["status"]["state"] == "Running"
    assert {r["replicaType"] for r in alpha["status"]["replicaStatuses"]} == {
        r["replicaType"] for r in job["spec"]["replicaSpecs"]
    }
    finish(deployed.cluster, ns, name, sorted(pods(deployed.cluster, ns, name)))
    assert get(deployed, ALPHA, ns, name)["status"]["state"] == "Succeeded"


def test_a_job_finishes_and_expires(deployed: Deployment) -> None:
    ns = namespace(deployed, "finish")
    job = yaml.safe_load((SAMPLES / "tensorflow-ps.yaml").read_text())
    job["spec"]["runPolicy"] = {"ttlSecondsAfterFinished": 1}
    deployed.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(job))
    running_pods(deployed.cluster, ns, "tensorflow-ps", 5)
    kwok.finish_pod(deployed.cluster, ns, "tensorflow-ps-chief-0", 0)
    eventually(
        "the finished job to expire",
        lambda: (
            deployed.cluster.kubectl("get", RESOURCE, "tensorflow-ps", "-n", ns, check=False).returncode != 0
        ),
        timeout=60,
    )


def test_a_tensorboard_is_dry_run_at_admission_and_created_by_the_deployed_manager(
    deployed: Deployment,
) -> None:
    ns = namespace(deployed, "tensorboard")
    job = yaml.safe_load((SAMPLES / "pytorch-tensorboard.yaml").read_text())
    unshared = copy.deepcopy(job)
    for replica in unshared["spec"]["replicaSpecs"].values():
        replica["template"]["spec"]["volumes"] = [{"name": "logs", "emptyDir": {}}]
    refused = deployed.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(unshared), check=False)
    assert refused.returncode == 1
    assert "spec.tensorboard.logDir: /logs/pytorch-tb is on volume 'logs'" in refused.stderr
    assert "each pod gets its own emptyDir" in refused.stderr
    # A quantity the apiserver refuses in the Deployment the job renders is named in the job's terms.
    greedy = copy.deepcopy(job)
    greedy["spec"]["tensorboard"]["resources"] = {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}
    refused = deployed.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(greedy), check=False)
    assert refused.returncode == 1
    assert "spec.tensorboard.resources.requests" in refused.stderr
    deployed.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(job))
    name = job["metadata"]["name"]
    board = eventually(
        "the TensorBoard's Deployment",
        lambda: (
            deployed.kubectl("get", "deployment", f"{name}-tensorboard", "-n", ns, check=False).returncode
            == 0
        ),
        timeout=60,
    )
    assert board
    assert get(deployed, "service", ns, f"{name}-tensorboard")["spec"]["ports"][0]["port"] == 6006


def test_a_pod_the_apiserver_refuses_is_refused_at_admission_or_reported_not_crashed_on(
    deployed: Deployment,
) -> None:
    ns = namespace(deployed, "refused")
    job = yaml.safe_load((SAMPLES / "pytorch-ddp.yaml").read_text())
    invalid = copy.deepcopy(job)
    invalid["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = (
        "Sometimes"
    )
    refused = deployed.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(invalid), check=False)
    assert refused.returncode == 1
    assert (
        'spec.replicaSpecs.Worker.template.spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes"'
        in refused.stderr
    )
    # What only the namespace refuses is admitted with a warning, and shown on the job.
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "none"},
        "spec": {"hard": {"pods": "0"}},
    }
    deployed.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(quota))
    eventually(
        "the quota to be counted",
        lambda: get(deployed, "resourcequota", ns, "none").get("status", {}).get("hard"),
        timeout=30,
    )
    admitted = deployed.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(job))
    assert "exceeded quota" in admitted.stderr  # kubectl prints the webhook's warning

    def repeated() -> dict[str, Any] | None:
        out = deployed.kubectl("get", "events", "-n", ns, "-o", "json").stdout
        failed = [e for e in json.loads(out)["items"] if e["reason"] == "FailedCreate"]
        return failed[0] if failed and failed[0]["count"] >= 2 else None

    event = eventually("a repeated FailedCreate event", repeated, timeout=60)
    assert "exceeded quota" in event["message"]
    conditions = get(deployed, RESOURCE, ns, job["metadata"]["name"])["status"]["conditions"]
    assert {c["type"]: c["reason"] for c in conditions}["ReplicaFailure"] == "QuotaExceeded"
    assert deployed.manager.alive()


# --- the upgrade story ---------------------------------------------------------------------------


def test_v1alpha1_objects_survive_a_round_trip_through_v1beta1(deployed: Deployment) -> None:
    ns = namespace(deployed, "upgrade")
    originals = {}
    for path in sorted((SAMPLES.parent / "v1alpha1").glob("*.yaml")):
        job = yaml.safe_load(path.read_text())
        job["metadata"]["name"] = f"up-{job['metadata']['name']}"
        deployed.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(job))
        originals[job["metadata"]["name"]] = job["spec"]
    for name, spec in originals.items():
        beta = get(deployed, RESOURCE, ns, name)
        assert beta["apiVersion"] == "training.kubetrain.dev/v1beta1"
        beta["metadata"].setdefault("labels", {})["touched"] = "v1beta1"
        deployed.kubectl("replace", "-f", "-", input=json.dumps(beta))
        alpha = get(deployed, ALPHA, ns, name)
        # Exact: the spec as the file wrote it, byte for byte (the apiserver sorts map keys).
        assert json.dumps(alpha["spec"], sort_keys=True) == json.dumps(spec, sort_keys=True), name
        assert alpha["metadata"]["labels"]["touched"] == "v1beta1"
        assert exact.FORM_DATA not in alpha["metadata"].get("annotations", {})


def test_storage_migration_rewrites_objects_stored_as_v1alpha1(deployed: Deployment) -> None:
    ns = namespace(deployed, "migrate")
    set_storage(deployed, "v1alpha1")
    # Managed by another controller, so no status write of the manager re-encodes it meanwhile;
    # stored as v1alpha1, that field lives in the conversion-data annotation.
    job = yaml.safe_load((SAMPLES / "tensorflow-ps.yaml").read_text())
    job["metadata"]["name"] = "tfjob-legacy"
    job["spec"]["managedBy"] = "example.com/elsewhere"
    deployed.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(job))
    stored_alpha = get(deployed, ALPHA, ns, "tfjob-legacy")
    assert "training.kubetrain.dev/conversion-data" in stored_alpha["metadata"]["annotations"]
    set_storage(deployed, "v1beta1")
    current = definition(deployed)
    assert set(current["status"]["storedVersions"]) == {"v1alpha1", "v1beta1"}
    before = get(deployed, RESOURCE, ns, "tfjob-legacy")["metadata"]["resourceVersion"]
    result = migrate_storage(deployed)
    assert "rewritten as v1beta1; storedVersions is now [v1beta1]" in result.stdout
    after = get(deployed, RESOURCE, ns, "tfjob-legacy")
    assert after["metadata"]["resourceVersion"] != before, "the v1alpha1 encoding was rewritten"
    assert after["spec"]["managedBy"] == "example.com/elsewhere", "nothing lost on the way"
    current = definition(deployed)
    assert current["status"]["storedVersions"] == ["v1beta1"]
    again = migrate_storage(deployed)
    assert ", 0 rewritten" in again.stdout, "objects already stored as v1beta1 are left alone"


def migrate_storage(d: Deployment) -> subprocess.CompletedProcess[str]:
    """`kubetrain migrate-storage`, as an admin runs it."""
    return subprocess.run(
        [
            sys.executable,
            "-P",
            "-m",
            "kubetrain.cli",
            "migrate-storage",
            f"--kubeconfig={d.cluster.kubeconfig}",
        ],
        capture_output=True,
        text=True,
        check=True,
    )


def definition(d: Deployment) -> dict[str, Any]:
    """The TrainingJob CRD as the apiserver has it now."""
    return dict(json.loads(d.kubectl("get", "crd", crd.NAME, "-o", "json").stdout))


def set_storage(d: Deployment, version: str) -> None:
    current = definition(d)
    ops = [
        {"op": "replace", "path": f"/spec/versions/{i}/storage", "value": v["name"] == version}
        for i, v in enumerate(current["spec"]["versions"])
    ]
    d.kubectl("patch", "crd", crd.NAME, "--type=json", "-p", json.dumps(ops))


# --- bad input -------------------------------------------------------------------------------------

FRAMEWORK_MISTAKES = st.sampled_from(
    [
        (
            "tensorflow",
            {"Chief": 1, "Master": 1},
            "spec.replicaSpecs: tensorflow takes a Chief or a Master, not both",
        ),
        (
            "tensorflow",
            {"Launcher": 1},
            "spec.replicaSpecs.Launcher: tensorflow has no replica type Launcher",
        ),
        ("pytorch", {"Master": 2}, "spec.replicaSpecs.Master.replicas: pytorch allows at most 1 Master"),
        ("mpi", {"Worker": 2}, "spec.replicaSpecs: mpi needs at least 1 Launcher"),
        ("mxnet", {"Scheduler": 2, "Server": 1, "Worker": 1}, "spec.replicaSpecs.Scheduler.replicas"),
        ("theano", {"Worker": 1}, "spec.framework.name: unknown framework 'theano'"),
    ]
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mistake=FRAMEWORK_MISTAKES, name=st.from_regex(r"\Abad-[a-z0-9]{1,8}\Z"))
def test_what_only_the_webhook_can_check_is_refused_with_the_field_named(
    deployed: Deployment, mistake: tuple[str, dict[str, int], str], name: str
) -> None:
    framework, replicas, message = mistake
    job = {
        "apiVersion": "training.kubetrain.dev/v1beta1",
        "kind": "TrainingJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "framework": {"name": framework},
            "replicaSpecs": {
                t: {"replicas": n, "template": {"spec": {"containers": [{"name": framework, "image": "x"}]}}}
                for t, n in replicas.items()
            },
        },
    }
    result = deployed.cluster.kubectl("create", "-f", "-", input=json.dumps(job), check=False)
    assert result.returncode != 0
    assert "denied the request" in result.stderr
    assert message in result.stderr
    assert deployed.manager.alive()


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(job=strategies.hub_jobs(), data=st.data())
def test_a_generated_job_with_a_mistyped_field_is_refused_with_its_path(
    deployed: Deployment, job: Any, data: st.DataObject
) -> None:
    doc = json.loads(json.dumps(scheme.encode(job)))
    doc["metadata"] = {"name": "mistyped", "namespace": "default"}
    doc.pop("status", None)
    numbers = [
        p
        for p in walk.json_paths(doc["spec"], ("spec",))
        if not {"template", "options"} & set(p) and type(walk.at(doc, p)) is int
    ]
    first = next(iter(doc["spec"]["replicaSpecs"]))
    target = data.draw(st.sampled_from(numbers)) if numbers else ("spec", "replicaSpecs", first, "replicas")
    parent = walk.at(doc, target[:-1])
    parent[target[-1]] = "not-a-number"
    result = deployed.cluster.kubectl("create", "-f", "-", input=json.dumps(doc), check=False)
    assert result.returncode != 0
    assert validation.format_path(target) in result.stderr
    assert deployed.manager.alive()


def test_names_another_object_holds_are_shown_on_the_job_and_those_objects_left_alone(
    deployed: Deployment,
) -> None:
    ns = namespace(deployed, "taken")
    job = yaml.safe_load((SAMPLES / "mpi-allreduce.yaml").read_text())
    name = job["metadata"]["name"]
    # A user's Secret and PodGroup, of the names the job's ssh key and first gang would take: no
    # cache holds these kinds, so the manager reads them to tell they are not its job's.
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{name}-ssh"},
        "data": {"k": "bWluZQ=="},
    }
    group = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": f"{name}-gang-0"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
    }
    for obj in (secret, group):
        deployed.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(obj))
    deployed.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(job))

    def refused(kind: str) -> dict[str, Any] | None:
        conditions = get(deployed, RESOURCE, ns, name).get("status", {}).get("conditions", [])
        c = next((c for c in conditions if c["type"] == "ReplicaFailure" and c["status"] == "True"), None)
        return c if c is not None and c["message"].startswith(kind) else None

    for kind, obj_name, resource in (
        ("Secret", f"{name}-ssh", "secret"),
        ("PodGroup", f"{name}-gang-0", "podgroups.scheduling.k8s.io"),
    ):
        c = eventually(f"the {kind} shown as taken", lambda kind=kind: refused(kind), timeout=60)
        assert c["reason"] == "NameTaken"
        assert c["message"] == (
            f"{kind} {obj_name}: the name is taken by an object; rename this job or delete that {kind}"
        )
        assert pods(deployed.cluster, ns, name) == {}
        assert "ownerReferences" not in get(deployed, resource, ns, obj_name)["metadata"]
        deployed.kubectl("delete", resource, obj_name, "-n", ns)
    running_pods(deployed.cluster, ns, name, 3)
    uid = get(deployed, RESOURCE, ns, name)["metadata"]["uid"]
    (owner,) = get(deployed, "secret", ns, f"{name}-ssh")["metadata"]["ownerReferences"]
    assert owner["uid"] == uid


# --- runtimes -----------------------------------------------------------------------------------


def shipped() -> expansion.Resolve:
    return expansion.from_documents(
        yaml.safe_load(p.read_text()) for p in (ROOT / "config" / "runtimes").glob("*.yaml")
    )


@pytest.mark.parametrize("sample", sorted(p.name for p in SHORT.glob("*.yaml")))
def test_every_shipped_runtime_admits_a_short_job_and_its_pods_are_what_the_expansion_renders(
    deployed: Deployment, sample: str
) -> None:
    ns = namespace(deployed, f"short-{sample.removesuffix('.yaml')}")
    job = yaml.safe_load((SHORT / sample).read_text())
    deployed.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(job))
    name = job["metadata"]["name"]
    # The same expansion, offline, from the files: the stored job must be what it makes.
    local = expansion.expand({**job, "metadata": {**job["metadata"], "namespace": ns}}, shipped()).obj["spec"]
    stored = get(deployed, RESOURCE, ns, name)
    assert stored["spec"] == {**local, "runtimeRef": {**local["runtimeRef"], "generation": 1}}
    hub = scheme.to_hub(scheme.decode(stored))
    running = running_pods(
        deployed.cluster, ns, name, sum(r.replicas for r in hub.spec.replica_specs.values())
    )
    images = {p["spec"]["containers"][0]["image"] for p in running.values()}
    assert images == {job["spec"]["trainer"]["image"]}
    trainer = job["spec"]["trainer"]
    runs = [
        (p["spec"]["containers"][0].get("command"), p["spec"]["containers"][0].get("args"))
        for p in running.values()
    ]
    assert (trainer.get("command"), trainer.get("args")) in runs
    status = wait_state(deployed.cluster, ns, name, "Running")
    assert status["runtime"] == {
        "kind": "ClusterTrainingRuntime",
        "name": job["spec"]["runtimeRef"]["name"],
        "generation": 1,
    }


def test_a_job_is_pinned_to_the_runtime_it_was_made_from_and_its_trainer_cannot_change(
    deployed: Deployment,
) -> None:
    ns = namespace(deployed, "pinned")
    runtime = yaml.safe_load((ROOT / "config" / "runtimes" / "torch-distributed.yaml").read_text())
    runtime = {**runtime, "kind": "TrainingRuntime", "metadata": {"name": "ours", "namespace": ns}}
    runtime["spec"]["network"] = {"hostNames": "PerReplica"}  # not the default a job is given
    deployed.kubectl("apply", "-f", "-", input=json.dumps(runtime))
    short = {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "TrainingJob",
        "metadata": {"name": "first", "namespace": ns},
        "spec": {
            "runtimeRef": {"kind": "TrainingRuntime", "name": "ours"},
            "trainer": {"image": "x:1", "command": ["python", "t.py"], "numNodes": 2},
        },
    }
    deployed.kubectl("create", "-f", "-", input=json.dumps(short))
    before = get(deployed, RESOURCE, ns, "first")["spec"]
    assert before["network"] == {"hostNames": "PerReplica"}  # the runtime's, not the policy's PerJob
    runtime["spec"]["runPolicy"] = {"backoffLimit": 9}
    deployed.kubectl("apply", "-f", "-", input=json.dumps(runtime))
    second = {**short, "metadata": {"name": "second", "namespace": ns}}
    deployed.kubectl("create", "-f", "-", input=json.dumps(second))
    after = get(deployed, RESOURCE, ns, "second")["spec"]
    assert (after["runPolicy"]["backoffLimit"], after["runtimeRef"]["generation"]) == (9, 2)
    deployed.kubectl("delete", "trainingruntime", "ours", "-n", ns)
    assert get(deployed, RESOURCE, ns, "first")["spec"] == before  # edited, then deleted: unchanged
    assert wait_state(deployed.cluster, ns, "first", "Running")["runtime"]["generation"] == 1
    changed = deployed.kubectl(
        "patch",
        RESOURCE,
        "first",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec": {"trainer": {"numNodes": 3}}}',
        check=False,
    )
    assert changed.returncode != 0
    assert "spec.trainer: field is immutable" in changed.stderr
    third = {**short, "metadata": {"name": "third", "namespace": ns}}
    gone = deployed.kubectl("create", "-f", "-", input=json.dumps(third), check=False)
    assert gone.returncode != 0
    assert f'spec.runtimeRef: TrainingRuntime "ours" not found in namespace {ns}' in gone.stderr


def kubetrain(d: Deployment, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it against the deployment."""
    verb, *rest = args  # the flag before any `--`: what follows it is the job's command
    argv = [sys.executable, "-P", "-m", "kubetrain.cli", verb, f"--kubeconfig={d.cluster.kubeconfig}", *rest]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def test_the_people_who_train_list_the_runtimes_and_submit_a_short_job_without_a_file(
    deployed: Deployment,
) -> None:
    listed = kubetrain(deployed, "runtimes")
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[1:]}
    assert {"torch-distributed", "mpi-distributed", "chainer-mpi"} <= set(rows)
    assert "Launcher=1" in rows["mpi-distributed"]
    ns = namespace(deployed, "cli-short")
    made = kubetrain(
        deployed, "submit", "-n", ns, "--runtime", "torch-distributed", "--image", "x:1", "--nodes", "3",
        "--name", "cli", "--", "torchrun", "train.py",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    running_pods(deployed.cluster, ns, "cli", 3)
    described = kubetrain(deployed, "describe", "-n", ns, "cli")
    assert "ClusterTrainingRuntime torch-distributed (generation 1)" in described.stdout, described.stdout
    refused = kubetrain(
        deployed, "submit", "-n", ns, "--runtime", "torch-distribute", "--image", "x", "--", "x"
    )
    assert refused.returncode != 0
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("error: ")
    assert 'spec.runtimeRef: ClusterTrainingRuntime "torch-distribute" not found' in line


def test_a_short_file_applied_again_server_side_leaves_the_job_as_it_was(deployed: Deployment) -> None:
    # GitOps tools apply the same file again and again; with server-side apply the fields the
    # expansion added are the applier's, which a second apply of the short file would prune.
    ns = namespace(deployed, "reapplied")
    path = SHORT / "torch-distributed.yaml"
    deployed.kubectl("apply", "--server-side", "-n", ns, "-f", str(path))
    first = get(deployed, RESOURCE, ns, "torch-distributed")["spec"]
    again = deployed.kubectl("apply", "--server-side", "-n", ns, "-f", str(path), check=False)
    assert again.returncode == 0, again.stderr
    assert get(deployed, RESOURCE, ns, "torch-distributed")["spec"] == first


def test_a_runtime_that_cannot_make_runnable_pods_is_refused_when_it_is_written(deployed: Deployment) -> None:
    runtime = yaml.safe_load((ROOT / "config" / "runtimes" / "torch-distributed.yaml").read_text())
    runtime["metadata"] = {"name": "two-masters"}
    runtime["spec"]["replicaSpecs"]["Master"] = {
        "replicas": 2,
        "template": {"spec": {"containers": [{"name": "pytorch"}]}},
    }
    refused = deployed.kubectl("apply", "-f", "-", input=json.dumps(runtime), check=False)
    assert refused.returncode != 0
    assert "denied the request: spec.replicaSpecs.Master.replicas: " in refused.stderr
    assert deployed.manager.alive()


# --- least privilege -------------------------------------------------------------------------------


def test_every_grant_of_the_role_is_used_and_nothing_was_refused(deployed: Deployment) -> None:
    used: set[tuple[str, str, str]] = set()
    refused = []
    for line in deployed.audit_log.read_text().splitlines():
        event = json.loads(line)
        ref = event.get("objectRef") or {}
        resource = ref.get("resource", "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        key = (ref.get("apiGroup", ""), resource, event["verb"])
        used.add(key)
        # RBAC's word, not a 403 of admission (a used-up quota refuses creates on purpose).
        if (event.get("annotations") or {}).get("authorization.k8s.io/decision") == "forbid":
            refused.append(key)
    assert not refused, f"refused: {sorted(set(refused))}"
    granted = set()
    for path in ("role.yaml", "leader_election_role.yaml"):
        for rule in yaml.safe_load((ROOT / "config" / "rbac" / path).read_text())["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    granted |= {(group, resource, verb) for verb in rule["verbs"]}
    assert granted - used - ONLY_ELSEWHERE == set(), "granted but never used"
    assert granted >= ONLY_ELSEWHERE


# Grants this cluster cannot exercise: the other gang schedulers' PodGroups (auto detection stops at
# the native one served here; tests/e2e/test_gang_coscheduling.py uses the coscheduling grants), a
# gang deleted only when a job restarts, Kueue's quota release and its Workloads (Kueue is not
# installed here: tests/e2e/test_kueue.py and test_kueue_workload.py), and a TensorBoard Deployment
# read after a 409 on its name (tests/integration/test_reconciler.py).
ONLY_ELSEWHERE = {
    ("scheduling.x-k8s.io", "podgroups", "list"),
    ("scheduling.x-k8s.io", "podgroups", "get"),
    ("scheduling.x-k8s.io", "podgroups", "create"),
    ("scheduling.x-k8s.io", "podgroups", "delete"),
    ("scheduling.volcano.sh", "podgroups", "list"),
    ("scheduling.volcano.sh", "podgroups", "get"),
    ("scheduling.volcano.sh", "podgroups", "create"),
    ("scheduling.volcano.sh", "podgroups", "delete"),
    ("apps", "deployments", "get"),
    ("scheduling.k8s.io", "podgroups", "delete"),
    ("", "pods", "patch"),
    ("kueue.x-k8s.io", "workloads", "watch"),
    ("kueue.x-k8s.io", "workloads", "create"),
    ("kueue.x-k8s.io", "workloads", "get"),
    ("kueue.x-k8s.io", "workloads", "delete"),
    ("kueue.x-k8s.io", "workloads", "patch"),
    ("kueue.x-k8s.io", "workloads/status", "patch"),
    ("kueue.x-k8s.io", "resourceflavors", "list"),
    ("kueue.x-k8s.io", "resourceflavors", "watch"),
    ("scheduling.k8s.io", "priorityclasses", "list"),
    ("scheduling.k8s.io", "priorityclasses", "watch"),
}


def test_nothing_reached_the_manager_as_a_crash(deployed: Deployment) -> None:
    assert deployed.manager.alive()
    log = deployed.manager.log.read_text()
    assert "Traceback" not in log
    assert "starting kubetrain-operator" in log
