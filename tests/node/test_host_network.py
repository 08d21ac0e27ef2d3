"""A replica on its node's network still resolves the job's Service names.

A pod with ``hostNetwork: true`` and the default ``dnsPolicy`` (``ClusterFirst``) gets its
node's resolver instead of the cluster's: here an empty resolv.conf (the kubelets' ``resolvConf``,
no upstream), on a real cluster a resolver that knows no Service. The Caffe2Job operator's own
examples ran on the host network, so a converted Caffe2Job keeps ``hostNetwork`` and its
``CAFFE2_CONFIG`` hosts and ``REDIS_HOST`` are Service names. kubetrain gives such a pod
``dnsPolicy: ClusterFirstWithHostNet``: the pod below resolves its own replica's Service by its
short name — through the cluster's search path, which only the cluster's DNS policy writes — to
its own address, which on the host network is its node's.

Here a host-network pod joins the network namespace all real nodes share (docs/real-nodes.md),
where CoreDNS answers on the cluster DNS address every kubelet names.
"""

from __future__ import annotations

import pytest
from testkit import jobs
from testkit.pods import example_job, logs, results

from kubetrain.devcluster import cluster as devcluster

pytestmark = pytest.mark.usefixtures("running_operator")

# Resolve argv[1] (a minute for its Service's endpoint to be published), then print the address
# and the resolv.conf the kubelet wrote; exit 1, saying why, if the name never resolves.
RESOLVE = """
import json, socket, sys, time
name, deadline = sys.argv[1], time.monotonic() + 60
resolv = open("/etc/resolv.conf").read()
while True:
    try:
        ip = socket.gethostbyname(name)
        break
    except OSError as e:
        if time.monotonic() > deadline:
            print(f"cannot resolve {name}: {e}; resolv.conf: {resolv!r}", flush=True)
            sys.exit(1)
        time.sleep(1)
print("KUBETRAIN-RESULT " + json.dumps({"name": name, "ip": ip, "resolv": resolv}), flush=True)
"""


def test_a_replica_on_the_host_network_resolves_its_service_and_succeeds(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    name = "hostnet"
    pod_name = f"{name}-worker-0"
    job = example_job(name, {"Worker": {"command": ["python3", "-c", RESOLVE, pod_name]}})
    job["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["hostNetwork"] = True
    jobs.create(cluster, namespace, job)
    jobs.wait_state(cluster, namespace, name, "Succeeded", timeout=120)

    pod = jobs.pods(cluster, namespace, name)[pod_name]
    assert pod["spec"]["hostNetwork"] is True
    assert pod["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"  # rendered: the template set none
    (result,) = results(logs(cluster, namespace, pod_name))
    # The cluster's search path, from the cluster's DNS policy: the short name resolved through it.
    assert f"search {namespace}.svc.cluster.local svc.cluster.local cluster.local" in result["resolv"]
    # The replica's Service names its pod, whose address on the host network is its node's.
    assert result["ip"] == pod["status"]["podIP"] == pod["status"]["hostIP"]
