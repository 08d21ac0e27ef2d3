"""End-to-end tier: the cluster tier, with scheduler, controllers and kwok nodes."""

import re

import pytest
from testkit import fixtures

from kubetrain.devcluster import cluster as devcluster


@pytest.fixture(scope="session")
def cluster(full_cluster: devcluster.Cluster) -> devcluster.Cluster:
    fixtures.install_crds(full_cluster)
    return full_cluster


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    """A failed test's report ends with what every operator log the cluster holds says of its namespace.

    Operators run as processes whose logs live in the cluster's work directory, which goes
    with the cluster at the end of the session: a failure seen only in CI must carry its own
    evidence (which pod, which failure record) in the report itself.
    """
    report = yield
    args = getattr(item, "funcargs", {})
    cluster, namespace = args.get("cluster"), args.get("namespace")
    if call.when == "call" and getattr(report, "failed", False) and cluster is not None:
        for log in sorted((cluster.workdir / "logs").glob("operator-*.log")):
            lines = _about(log.read_text(errors="replace").splitlines(), namespace)[-80:]
            title = f"operator log {log.name}, {'lines about ' + namespace if namespace else 'its end'}"
            report.sections.append((title, "\n".join(lines)))
    return report


def _about(lines: list[str], namespace: str | None) -> list[str]:
    """The lines about ``namespace``, and every error with its traceback: one operator serves a
    whole module, and the other tests' namespaces would crowd the failing one's out."""
    if namespace is None:
        return lines
    kept, keeping = [], False
    for line in lines:
        if _STAMP.match(line):
            keeping = namespace in line or " ERROR " in line or " CRITICAL " in line
        if keeping:
            kept.append(line)
    return kept


_STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
