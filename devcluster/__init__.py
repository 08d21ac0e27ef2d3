"""A real Kubernetes cluster on this machine, for tests and local runs (dev tooling).

No Docker and no downloaded binaries: ``hack/build-control-plane.sh`` builds etcd,
kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok and kustomize from
Go modules, and ``hack/build-node.sh`` a real node's kubelet, kube-proxy, containerd, CoreDNS
and pause program; all cached. This package runs them, one module per component:

- ``controlplane`` — etcd and kube-apiserver (the ``apiserver`` tier, like envtest), and
  kube-controller-manager and kube-scheduler;
- ``kwok`` — fake nodes that move bound pods to Running, finish them with a chosen exit
  code, evict pods and lose nodes (the fast tiers and scale);
- ``network`` and ``services`` — the namespaces real nodes live in, with CoreDNS and
  kube-proxy; ``realnode`` — a kubelet and containerd per node, running real containers;
- ``images`` — the container images real nodes run, built here by content hash;
- ``cluster`` — the tiers put together; ``deploy`` — ``config/default`` applied to one;
  ``dev`` — ``kubetrain dev``; ``process`` and ``binaries`` — children that never outlive
  their parent, a supervisor that restarts them, and where the binaries are; ``workdir`` —
  a cluster's directory, and the removal of those a killed process left behind.

It lives outside ``kubetrain.operator``: the operator never imports it.
"""

from kubetrain.devcluster import binaries, cluster, images, kwok, network, process, realnode, workdir

__all__ = ["binaries", "cluster", "images", "kwok", "network", "process", "realnode", "workdir"]
