"""Integration tier: kubetrain's CRD in a real kube-apiserver + etcd (the apiserver tier)."""

import pytest
from testkit import fixtures

from kubetrain.devcluster import cluster as devcluster


@pytest.fixture(scope="session")
def cluster(apiserver: devcluster.Cluster) -> devcluster.Cluster:
    fixtures.install_crds(apiserver)
    return apiserver
