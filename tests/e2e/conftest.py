"""End-to-end tier: the cluster tier, with scheduler, controllers and kwok nodes."""

import pytest
from testkit import fixtures

from kubetrain.devcluster import cluster as devcluster


@pytest.fixture(scope="session")
def cluster(full_cluster: devcluster.Cluster) -> devcluster.Cluster:
    fixtures.install_crds(full_cluster)
    return full_cluster


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    """A failed test's report ends with the tail of every operator log the cluster holds.

    Operators run as processes whose logs live in the cluster's work directory, which goes
    with the cluster at the end of the session: a failure seen only in CI must carry its own
    evidence (which pod, which failure record) in the report itself.
    """
    report = yield
    cluster = getattr(item, "funcargs", {}).get("cluster")
    if call.when == "call" and getattr(report, "failed", False) and cluster is not None:
        for log in sorted((cluster.workdir / "logs").glob("operator-*.log")):
            lines = log.read_text(errors="replace").splitlines()[-80:]
            report.sections.append((f"operator log {log.name} (last 80 lines)", "\n".join(lines)))
    return report
