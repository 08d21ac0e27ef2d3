"""End-to-end tier: the cluster tier, with scheduler, controllers and kwok nodes."""

import pytest
from testkit import fixtures

from kubetrain.devcluster import cluster as devcluster


@pytest.fixture(scope="session")
def cluster(full_cluster: devcluster.Cluster) -> devcluster.Cluster:
    fixtures.install_crds(full_cluster)
    return full_cluster
