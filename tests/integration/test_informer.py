"""The informer against a real apiserver: restarts, partitions and compaction lose no event."""

from __future__ import annotations

import asyncio
import pathlib
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from testkit.proxy import Proxy

from kubetrain.devcluster import cluster as devcluster
from kubetrain.operator.runtime import cache, client, informer

LABEL = {"app": "informer-test"}


@pytest.fixture(scope="module")
def bare_apiserver() -> Iterator[devcluster.Cluster]:
    # Without the watch cache, watches read etcd directly, so a compaction reaches them as 410.
    c = devcluster.start(devcluster.Tier.APISERVER, apiserver_args=("--watch-cache=false",))
    yield c
    c.stop()


def kubeconfig_via(c: devcluster.Cluster, port: int, path: pathlib.Path) -> str:
    config = yaml.safe_load(c.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path.write_text(yaml.safe_dump(config))
    return str(path)


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def __call__(self, event: str, obj: cache.Obj, _old: cache.Obj | None) -> None:
        self.events.append((event, obj["metadata"]["name"], obj.get("data", {}).get("v", "")))


def configmap(name: str, v: str, labels: dict[str, str] = LABEL) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": {"v": v},
    }


async def until(what: str, check: Any, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.05)


def state(inf: informer.Informer) -> dict[str, str]:
    return {o["metadata"]["name"]: o["data"]["v"] for o in inf.store.objects()}


async def scenario(
    c: devcluster.Cluster, tmp_path: pathlib.Path, disrupt: str
) -> tuple[Recorder, informer.Informer]:
    admin = await client.Client.connect(str(c.kubeconfig))
    ns = f"inf-{disrupt}"
    await admin.create(
        client.Resource("", "v1", "namespaces", "Namespace", namespaced=False), {"metadata": {"name": ns}}
    )
    proxy = Proxy("127.0.0.1", urllib.parse.urlsplit(c.server).port or 443)
    await proxy.start()
    watched = await client.Client.connect(kubeconfig_via(c, proxy.port, tmp_path / "via-proxy"), timeout=5)
    inf = informer.Informer(
        watched,
        client.CONFIGMAPS,
        namespace=ns,
        label_selector="app=informer-test",
        inactivity_timeout=5,
        backoff=(0.2, 1.0),
    )
    seen = Recorder()
    inf.add_handler(seen)
    task = asyncio.create_task(inf.run())
    try:
        await until("sync", inf.synced.is_set)
        await admin.create(client.CONFIGMAPS, configmap("a", "1"), ns)
        await admin.create(client.CONFIGMAPS, configmap("b", "1"), ns)
        await admin.create(client.CONFIGMAPS, configmap("unlabelled", "1", {}), ns)
        await until("a and b", lambda: state(inf) == {"a": "1", "b": "1"})

        if disrupt == "restart":
            c.restart_apiserver()  # blocks the loop a moment; processes start on the main thread
        else:
            proxy.partition()
        # Changes the informer cannot see as they happen.
        await admin.merge_patch(client.CONFIGMAPS, "a", {"data": {"v": "2"}}, ns)
        await admin.delete(client.CONFIGMAPS, "b", ns)
        await admin.create(client.CONFIGMAPS, configmap("c", "1"), ns)
        if disrupt == "compaction":
            c.compact_etcd()
            proxy.heal()

        await until("the informer to catch up", lambda: state(inf) == {"a": "2", "c": "1"})
        await admin.merge_patch(client.CONFIGMAPS, "c", {"data": {"v": "2"}}, ns)
        await until("a later change", lambda: state(inf) == {"a": "2", "c": "2"})
    finally:
        task.cancel()
        await proxy.stop()
    return seen, inf


EXPECTED = [
    ("ADDED", "a", "1"),
    ("ADDED", "b", "1"),
    ("MODIFIED", "a", "2"),
    ("DELETED", "b", "1"),
    ("ADDED", "c", "1"),
    ("MODIFIED", "c", "2"),
]


def test_a_watch_survives_an_apiserver_restart(
    bare_apiserver: devcluster.Cluster, tmp_path: pathlib.Path
) -> None:
    seen, inf = asyncio.run(scenario(bare_apiserver, tmp_path, "restart"))
    assert seen.events == EXPECTED
    assert inf.relists == 1  # resumed from its resourceVersion, no re-list needed


def test_a_compaction_forces_a_relist_that_loses_no_event(
    bare_apiserver: devcluster.Cluster, tmp_path: pathlib.Path
) -> None:
    seen, inf = asyncio.run(scenario(bare_apiserver, tmp_path, "compaction"))
    assert inf.relists == 2  # 410 Gone after the compaction
    # The re-list reports the missed changes as one diff: same events, key order within the diff.
    assert seen.events[:2] == EXPECTED[:2]
    assert sorted(seen.events[2:5]) == sorted(EXPECTED[2:5])
    assert seen.events[5:] == EXPECTED[5:]


def test_an_event_after_a_quiet_spell_is_seen_at_once(bare_apiserver: devcluster.Cluster) -> None:
    # Watches that stay silent past their read timeout, again and again (a quiet cluster, a long
    # training run), are resumed at once: the first event after them is not held by a backoff.
    async def scenario() -> tuple[float, int]:
        api = await client.Client.connect(str(bare_apiserver.kubeconfig))
        ns = "inf-quiet"
        await api.create(
            client.Resource("", "v1", "namespaces", "Namespace", namespaced=False), {"metadata": {"name": ns}}
        )
        inf = informer.Informer(
            api, client.CONFIGMAPS, namespace=ns, inactivity_timeout=0.5, backoff=(0.5, 30)
        )
        task = asyncio.create_task(inf.run())
        try:
            await until("sync", inf.synced.is_set)
            await asyncio.sleep(6)  # twelve silent watches: a backoff would be past 30 s by now
            await api.create(client.CONFIGMAPS, configmap("after", "1"), ns)
            began = asyncio.get_running_loop().time()
            await until("the change", lambda: "after" in state(inf), timeout=60)
            return asyncio.get_running_loop().time() - began, inf.relists
        finally:
            task.cancel()
            await api.close()

    took, relists = asyncio.run(scenario())
    assert took < 1.0, f"seen {took:.1f} s after it happened"
    assert relists == 1, "resumed from its resourceVersion each time"
