"""pytest fixtures for the cluster tiers: a control plane per session, a namespace per test.

A tier that cannot start raises, and every test that needs it errors with the reason:
the cluster tiers never skip.
"""

from __future__ import annotations

import pathlib
import uuid
from collections.abc import Iterator

import kr8s
import pytest

from kubetrain.devcluster import cluster as devcluster

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _start(request: pytest.FixtureRequest, tier: devcluster.Tier) -> devcluster.Cluster:
    c = devcluster.start(tier, nodes=2)
    request.addfinalizer(c.stop)
    return c


@pytest.fixture(scope="session")
def apiserver(request: pytest.FixtureRequest) -> devcluster.Cluster:
    """etcd + kube-apiserver (envtest-like), shared by the session."""
    return _start(request, devcluster.Tier.APISERVER)


@pytest.fixture(scope="session")
def full_cluster(request: pytest.FixtureRequest) -> devcluster.Cluster:
    """The apiserver tier plus controller manager, scheduler and two kwok nodes."""
    return _start(request, devcluster.Tier.CLUSTER)


def install_crds(c: devcluster.Cluster) -> None:
    c.install_crds(ROOT / "config")


@pytest.fixture
def namespace(cluster: devcluster.Cluster) -> Iterator[str]:
    """A fresh namespace in the tier's cluster (each tier's conftest defines ``cluster``)."""
    c = cluster
    name = f"t-{uuid.uuid4().hex[:10]}"
    c.kubectl("create", "namespace", name)
    if c.tier is devcluster.Tier.CLUSTER:
        # Pods are refused until the service-account controller made `default` here.
        c.kubectl("wait", "--for=create", "--timeout=60s", "serviceaccount/default", "-n", name)
    yield name
    c.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def kube(cluster: devcluster.Cluster) -> kr8s.Api:
    """A kr8s client (sync API) authenticated as the cluster admin."""
    return kr8s.api(kubeconfig=str(cluster.kubeconfig))
