"""The operator's side: its informers' caches filled in a process of their own, one variant of the
caches' transforms at a time; RSS and live size by cache, sync times, the no-op reconcile rate."""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from kubetrain_bench import scripts
from kubetrain_bench.procs import rss_mib
from kubetrain_bench.runtime.objects import NAMESPACE

VARIANTS = ("none", "strip", "project")

Obj = dict[str, Any]


def transforms(variant: str) -> dict[str, Callable[[Obj], Obj]]:
    from kubetrain.operator import projection
    from kubetrain.operator.runtime import informer

    if variant == "none":
        return dict.fromkeys(("TrainingJob", "Pod", "Service", "ConfigMap", "Node"), lambda o: o)
    if variant == "strip":
        return dict.fromkeys(
            ("TrainingJob", "Pod", "Service", "ConfigMap", "Node"), informer.strip_managed_fields
        )
    return {
        "TrainingJob": projection.training_job,
        "Pod": projection.pod,
        "Service": projection.service,
        "ConfigMap": projection.config_map,
        "Node": projection.node,
    }


def deep_size(objs: list[Obj]) -> int:
    """Bytes of ``objs`` and everything they hold, each Python object counted once."""
    seen: set[int] = set()
    total = 0
    stack: list[Any] = list(objs)
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, list | tuple):
            stack.extend(o)
    return total


async def operator(kubeconfig: str, variant: str) -> Obj:
    from kubetrain.operator import main
    from kubetrain.operator.runtime import cache, client, controller, informer, reconcile

    api = await client.Client.connect(kubeconfig, qps=100, burst=200)
    chosen = transforms(variant)
    caches: list[Obj] = []
    informers: dict[str, informer.Informer] = {}
    tasks = []
    gc.collect()
    rss_start = rss_mib()
    for resource_, selected in (
        (client.TRAININGJOBS, False),
        (client.PODS, True),
        (client.SERVICES, True),
        (client.CONFIGMAPS, True),
        (client.NODES, False),
    ):
        gc.collect()
        before = rss_mib()
        inf = informer.Informer(
            api,
            resource_,
            namespace=NAMESPACE if resource_.namespaced else None,
            label_selector=main.CHILD_SELECTOR if selected else None,
            indexers={"owner": cache.by_owner()} if selected else None,
            transform=chosen[resource_.kind],
        )
        started = time.perf_counter()
        tasks.append(asyncio.create_task(inf.run()))
        await inf.synced.wait()
        synced = time.perf_counter() - started
        gc.collect()
        after = rss_mib()
        informers[resource_.kind] = inf
        caches.append(
            {
                "kind": resource_.kind,
                "objects": len(inf.store),
                "sync_seconds": synced,
                "rss_mib": after - before,
            }
        )
    rss_synced = rss_mib()
    # Not getrusage's ru_maxrss: Linux carries it over from the parent through fork and exec.
    max_rss = rss_mib("VmHWM")
    # Last: the walk's own bookkeeping would blur every RSS figure after it.
    for c in caches:
        c["live_mib"] = deep_size(informers[c["kind"]].store.objects()) / 2**20
    pods = informers["Pod"]
    total = len(pods.store)

    class NoOp:
        count = 0
        done = asyncio.Event()

        async def reconcile(self, request: reconcile.Request) -> reconcile.Result:
            NoOp.count += 1
            if NoOp.count == total:
                NoOp.done.set()
            return reconcile.Result()

    ctrl = controller.Controller("bench", NoOp(), pods, workers=4)
    keys = pods.store.keys()
    for key in keys:
        namespace, name = key.split("/")
        ctrl.queue.add(reconcile.Request(namespace, name))
    started = time.perf_counter()
    tasks.append(asyncio.create_task(ctrl.run()))
    await NoOp.done.wait()
    reconciled = time.perf_counter() - started
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await api.close()
    return {
        "variant": variant,
        "caches": caches,
        "rss_start_mib": rss_start,
        "rss_synced_mib": rss_synced,
        "max_rss_mib": max_rss,
        "reconcile_seconds": reconciled,
        "reconciles_per_second": total / reconciled,
    }


def run_operator(kubeconfig: str, variant: str) -> Obj:
    """One variant measured in a fresh process: this benchmark's entry point with ``--operator``."""
    out = scripts.run("runtime_bench", "--operator", kubeconfig, variant, check=True)
    figures: Obj = json.loads(out.stdout)
    return figures
