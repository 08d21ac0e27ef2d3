"""Node tier: real nodes — a kubelet and containerd each — running real containers.

One cluster serves the session: the control plane, two real nodes (no kwok), CoreDNS and
kube-proxy, with the images built here. Pods really run: training scripts print, ranks
resolve each other's Service names through CoreDNS, kubelets restart containers in place.
A cluster that cannot start errors every test with the reason: this tier never skips.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest
from testkit import fixtures, operator

from kubetrain.devcluster import cluster as devcluster


@pytest.fixture(scope="session")
def cluster() -> Iterator[devcluster.Cluster]:
    c = devcluster.start(
        devcluster.Tier.CLUSTER, nodes=0, real_nodes=2, root=fixtures.ROOT, timeout=300, seed_images=True
    )
    try:
        fixtures.install_crds(c)
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def running_operator(cluster: devcluster.Cluster) -> Iterator[None]:
    op = operator.start(cluster)
    yield
    op.stop()


@pytest.fixture
def shared_dir() -> Iterator[str]:
    """A fresh directory of this host that every real node sees, for a hostPath the pods share."""
    path = tempfile.mkdtemp(prefix="kubetrain-shared-")
    os.chmod(path, 0o755)  # TensorBoard runs as 65532; the ranks write as root
    yield path
    shutil.rmtree(path, ignore_errors=True)
