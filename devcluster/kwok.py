"""Fake nodes and pod lifecycle with kwok, and the knobs tests turn.

kwok plays the kubelet for nodes annotated ``kwok.x-k8s.io/node: fake``, with :data:`POD_WORKERS`
pods in flight at once. Its stages (see :data:`STAGES`) do what a kubelet would, minus containers:

- a new node becomes Ready, with :data:`NODE_CAPACITY` (GPUs included), declaring that it restarts
  pods in place as a 1.36 kubelet does (it never does: a moved pod keeps running);
- a bound pod becomes Running and Ready, with a pod IP;
- a Running pod annotated ``kwok.kubetrain.dev/exit-code: N`` ends — Succeeded for 0,
  else Failed — with every container terminated with that code and the reason in
  ``kwok.kubetrain.dev/reason`` (``Completed`` / ``Error`` by default);
- a deleted pod is reported ended (Failed, unless it had ended already), as a kubelet reports
  it once its containers are stopped, and removed — unless the taint manager deleted it (its
  node is lost); a finalizer (Kueue's) keeps it, ended, until its holder lets it go.

kwok serves ``pods/log`` as a kubelet does: every pod's ``kubetrain-agent`` container logs what
:func:`write_agent_log` last wrote (progress lines, for jobs with ``spec.progress``).

:func:`finish_pod` sets those annotations; :func:`evict_pod` goes through the Eviction
API (the pod gets ``DisruptionTarget``); :func:`lose_node` taints a node ``NoExecute``,
so the taint-eviction controller marks its pods ``DisruptionTarget`` and deletes them,
and they stay Terminating as on a real lost node.
"""

from __future__ import annotations

import datetime
import json
import pathlib
from typing import Any

from kubetrain.api import naming
from kubetrain.devcluster import process
from kubetrain.devcluster.controlplane import ControlPlane

__all__ = [
    "EXIT_CODE",
    "POD_WORKERS",
    "REASON",
    "STAGES",
    "agent_log",
    "evict_pod",
    "finish_pod",
    "lose_node",
    "restore_node",
    "start",
    "write_agent_log",
]

MANAGED = "kwok.x-k8s.io/node"
EXIT_CODE = "kwok.kubetrain.dev/exit-code"
REASON = "kwok.kubetrain.dev/reason"
LOST_TAINT = "kubetrain.dev/node-lost"
# How many pods kwok brings to their next stage at once (its default is 4), each one PATCH. A cluster
# has a kubelet per node, each reporting its own pods: with 4, a benchmark's pods waited for kwok
# (at 2,000 jobs x 4, bound pods were marked Running about 30 s late; docs/performance.md).
POD_WORKERS = 16
NODE_CAPACITY = {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"}

STAGES = f"""\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {{name: node-ready}}
spec:
  resourceRef: {{apiGroup: v1, kind: Node}}
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ["True"]
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      conditions:
      - {{type: Ready, status: "True", reason: KubeletReady, message: kwok, lastHeartbeatTime: {{{{ $now | Quote }}}}, lastTransitionTime: {{{{ $now | Quote }}}}}}
      addresses:
      - {{type: InternalIP, address: {{{{ NodeIP | Quote }}}}}}
      - {{type: Hostname, address: {{{{ NodeName | Quote }}}}}}
      allocatable: {json.dumps(NODE_CAPACITY)}
      capacity: {json.dumps(NODE_CAPACITY)}
      declaredFeatures: [{naming.IN_PLACE_FEATURE}]
      daemonEndpoints: {{kubeletEndpoint: {{Port: {{{{ NodePort }}}}}}}}
      nodeInfo: {{architecture: amd64, operatingSystem: linux, kubeletVersion: kwok, containerRuntimeVersion: kwok,
                 kernelVersion: kwok, osImage: kwok, machineID: "", bootID: "", systemUUID: "", kubeProxyVersion: ""}}
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {{name: pod-running}}
spec:
  resourceRef: {{apiGroup: v1, kind: Pod}}
  selector:
    matchExpressions:
    - {{key: .metadata.deletionTimestamp, operator: DoesNotExist}}
    - {{key: .status.phase, operator: In, values: [Pending]}}
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      conditions:
      - {{type: Initialized, status: "True", lastTransitionTime: {{{{ $now | Quote }}}}}}
      - {{type: Ready, status: "True", lastTransitionTime: {{{{ $now | Quote }}}}}}
      - {{type: ContainersReady, status: "True", lastTransitionTime: {{{{ $now | Quote }}}}}}
      containerStatuses:
      {{{{ range .spec.containers }}}}
      - name: {{{{ .name | Quote }}}}
        image: {{{{ .image | Quote }}}}
        ready: true
        started: true
        restartCount: 0
        state: {{running: {{startedAt: {{{{ $now | Quote }}}}}}}}
      {{{{ end }}}}
      {{{{ with NodeIPWith .spec.nodeName }}}}
      hostIP: {{{{ . | Quote }}}}
      {{{{ end }}}}
      {{{{ with PodIPWith .spec.nodeName false ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}}}
      podIP: {{{{ . | Quote }}}}
      {{{{ end }}}}
      phase: Running
      startTime: {{{{ $now | Quote }}}}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {{name: pod-exit}}
spec:
  resourceRef: {{apiGroup: v1, kind: Pod}}
  selector:
    matchExpressions:
    - {{key: .metadata.deletionTimestamp, operator: DoesNotExist}}
    - {{key: .status.phase, operator: In, values: [Running]}}
    - {{key: '.metadata.annotations["{EXIT_CODE}"]', operator: Exists}}
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      {{{{ $code := index .metadata.annotations "{EXIT_CODE}" }}}}
      {{{{ $reason := index .metadata.annotations "{REASON}" }}}}
      {{{{ if not $reason }}}}{{{{ if eq $code "0" }}}}{{{{ $reason = "Completed" }}}}{{{{ else }}}}{{{{ $reason = "Error" }}}}{{{{ end }}}}{{{{ end }}}}
      conditions:
      - {{type: Ready, status: "False", reason: PodCompleted, lastTransitionTime: {{{{ $now | Quote }}}}}}
      - {{type: ContainersReady, status: "False", reason: PodCompleted, lastTransitionTime: {{{{ $now | Quote }}}}}}
      containerStatuses:
      {{{{ range .spec.containers }}}}
      - name: {{{{ .name | Quote }}}}
        image: {{{{ .image | Quote }}}}
        ready: false
        started: false
        restartCount: 0
        state:
          terminated:
            exitCode: {{{{ $code }}}}
            reason: {{{{ $reason | Quote }}}}
            startedAt: {{{{ $now | Quote }}}}
            finishedAt: {{{{ $now | Quote }}}}
      {{{{ end }}}}
      phase: {{{{ if eq $code "0" }}}}Succeeded{{{{ else }}}}Failed{{{{ end }}}}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {{name: pod-delete}}
spec:
  resourceRef: {{apiGroup: v1, kind: Pod}}
  selector:
    matchExpressions:
    - {{key: .metadata.deletionTimestamp, operator: Exists}}
    # Pods the taint manager deleted sit on a lost node: no kubelet confirms their end.
    - key: '.status.conditions.[] | select( .type == "DisruptionTarget" ) | .reason'
      operator: NotIn
      values: [DeletionByTaintManager]
  next:
    # As a kubelet does: a deleted pod's containers are stopped and the pod reported terminal
    # (Failed, unless it had ended already) before the deletion is confirmed. A pod held by a
    # finalizer (Kueue's) outlives that, and its holder sees it ended.
    statusTemplate: |
      {{{{ if or (eq .status.phase "Succeeded") (eq .status.phase "Failed") }}}}
      phase: {{{{ .status.phase | Quote }}}}
      {{{{ else }}}}
      {{{{ $now := Now }}}}
      conditions:
      - {{type: Ready, status: "False", reason: PodCompleted, lastTransitionTime: {{{{ $now | Quote }}}}}}
      - {{type: ContainersReady, status: "False", reason: PodCompleted, lastTransitionTime: {{{{ $now | Quote }}}}}}
      containerStatuses:
      {{{{ range .spec.containers }}}}
      - name: {{{{ .name | Quote }}}}
        image: {{{{ .image | Quote }}}}
        ready: false
        started: false
        restartCount: 0
        state:
          terminated: {{exitCode: 137, reason: Error, finishedAt: {{{{ $now | Quote }}}}}}
      {{{{ end }}}}
      phase: Failed
      {{{{ end }}}}
    delete: true
"""


def start(c: ControlPlane, timeout: float, *, nodes: int, lease_seconds: int = 0) -> None:
    """kwok with ``nodes`` fake nodes; with ``lease_seconds``, it renews their Leases (heartbeats)."""
    stages = c.workdir / "kwok-stages.yaml"
    stages.write_text(STAGES + _logs(agent_log(c)) + _configuration())
    port = process.free_port()
    kwok = process.Process(
        "kwok",
        [
            c.bins["kwok"],
            f"--kubeconfig={c.kubeconfig}",
            f"--config={stages}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={MANAGED}=fake",
            "--cidr=10.244.0.0/16",
            "--node-ip=127.0.0.1",
            # Its kubelet API (logs) on this port, which its nodes name as their kubelet's.
            f"--server-address=127.0.0.1:{port}",
            f"--node-port={port}",
            *([f"--node-lease-duration-seconds={lease_seconds}"] if lease_seconds else []),
        ],
        c.workdir / "logs" / "kwok.log",
    )
    kwok.start()
    c.processes.append(kwok)
    # One apply for all: a benchmark's hundreds of nodes are up in a second, not a kubectl each.
    nodes_list = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [_node(f"kwok-node-{i}") for i in range(nodes)],
    }
    c.kubectl("apply", "-f", "-", input=json.dumps(nodes_list))
    process.wait_until(
        f"{nodes} kwok node(s) to be Ready",
        lambda: _ready_nodes(c) >= nodes,
        timeout=timeout,
        watch=[kwok],
        interval=0.3,
    )


def _configuration() -> str:
    """kwok's own options. Given a configuration, kwok (v0.8.0) defaults none of them: each of its
    defaults is named here (``SetObjectDefaults_KwokConfiguration``), the debugging handlers that
    serve ``pods/log`` among them. Its flags still win."""
    options = {
        "podPlayStageParallelism": POD_WORKERS,
        "nodePlayStageParallelism": 4,
        "nodeLeaseParallelism": 4,
        "podsOnNodeSyncParallelism": 1,
        "enableDebuggingHandlers": True,
        "enableContentionProfiling": False,
        "enableProfilingHandler": True,
        "enablePodsOnNodeSyncListPager": True,
        "enablePodsOnNodeSyncStreamWatch": False,
    }
    return f"""---
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options: {json.dumps(options)}
"""


def _logs(path: pathlib.Path) -> str:
    return f"""---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata: {{name: kubetrain-agent}}
spec:
  logs:
  - containers: [{naming.AGENT}]
    logsFile: {json.dumps(str(path))}
"""


def agent_log(c: ControlPlane) -> pathlib.Path:
    """The log every kwok pod's kubetrain agent has (`pods/log`, as the apiserver reads it from
    kwok as from a kubelet): one file for all, see :func:`write_agent_log`."""
    return c.workdir / "kwok-agent.log"


def write_agent_log(c: ControlPlane, lines: list[str]) -> None:
    """Make ``lines`` every kwok agent's log, as the kubelet writes a container's (CRI format),
    in place at once (a reader sees the old log or the new one)."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    tmp = agent_log(c).with_suffix(".tmp")
    tmp.write_text("".join(f"{now} stdout F {line}\n" for line in lines))
    tmp.replace(agent_log(c))


def add_node(
    c: ControlPlane,
    name: str,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> None:
    """A kwok node; ``labels`` and ``taints`` are there from its first moment, so no pod lands on
    it before they are."""
    c.kubectl("apply", "-f", "-", input=json.dumps(_node(name, labels, taints)))


def _node(
    name: str, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {MANAGED: "fake"},
            "labels": {"type": "kwok", "kubernetes.io/hostname": name, **(labels or {})},
        },
    }
    if taints:
        node["spec"] = {"taints": taints}
    return node


def _ready_nodes(c: ControlPlane) -> int:
    out = c.kubectl("get", "nodes", "-o", "json").stdout
    ready = 0
    for node in json.loads(out)["items"]:
        for cond in node.get("status", {}).get("conditions", []):
            ready += cond["type"] == "Ready" and cond["status"] == "True"
    return ready


def finish_pod(c: ControlPlane, namespace: str, pod: str, exit_code: int, reason: str | None = None) -> None:
    """Make a running pod's containers exit with ``exit_code`` (and ``reason``)."""
    args = ["annotate", "pod", pod, "-n", namespace, "--overwrite", f"{EXIT_CODE}={exit_code}"]
    if reason:
        args.append(f"{REASON}={reason}")
    c.kubectl(*args)


def evict_pod(c: ControlPlane, namespace: str, pod: str) -> None:
    """Evict through the Eviction API, as a drain or the descheduler would."""
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod, "namespace": namespace},
    }
    c.kubectl(
        "create",
        "--raw",
        f"/api/v1/namespaces/{namespace}/pods/{pod}/eviction",
        "-f",
        "-",
        input=json.dumps(eviction),
    )


def lose_node(c: ControlPlane, node: str) -> None:
    """The node's kubelet vanishes: its pods are evicted and stay Terminating.

    The NoExecute taint makes the taint-eviction controller mark every pod there
    ``DisruptionTarget`` (reason ``DeletionByTaintManager``) and delete it; kwok's
    pod-delete stage leaves such pods alone, as a dead kubelet would.
    """
    patch = {"spec": {"taints": [{"key": LOST_TAINT, "effect": "NoExecute"}]}}
    c.kubectl("patch", "node", node, "--type=merge", "-p", json.dumps(patch))


def restore_node(c: ControlPlane, node: str) -> None:
    """Undo :func:`lose_node`: the node takes pods again."""
    c.kubectl("taint", "node", node, f"{LOST_TAINT}:NoExecute-", check=False)
