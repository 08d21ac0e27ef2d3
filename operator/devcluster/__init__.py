"""A real Kubernetes control plane on this machine, for tests and local runs.

No Docker and no downloaded binaries: ``hack/build-control-plane.sh`` builds etcd,
kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok and kustomize
from Go modules and caches them. This package runs them:

- tier ``apiserver`` — etcd and kube-apiserver, like envtest: TLS with a generated CA,
  an admin client-certificate kubeconfig, RBAC and service-account keys;
- tier ``cluster`` — also kube-controller-manager (garbage collector, namespaces,
  service accounts, taint eviction, pod GC), kube-scheduler, and kwok keeping N fake
  nodes and moving bound pods to Running. :mod:`.kwok` finishes a pod with a chosen exit
  code, evicts pods and loses nodes.

Every child process is tied to its parent (it is killed if the parent dies, however)
and is stopped on exit, so nothing is left behind. Modules: ``binaries``, ``pki``,
``process``, ``cluster``, ``kwok``.
"""

from kubetrain.operator.devcluster import binaries, cluster, kwok, pki, process

__all__ = ["binaries", "cluster", "kwok", "pki", "process"]
