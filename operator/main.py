"""``kubetrain-operator``: the operator process.

Flags follow controller-runtime's manager (``--leader-elect``, ``--metrics-bind-address``,
``--health-probe-bind-address``, ...). The process configures JSON logs and tracing,
connects with the given QPS and burst, and runs a :class:`~.runtime.manager.Manager`
with the TrainingJob controller until SIGTERM or SIGINT (exit 0) or until it loses
leadership (exit 1, so Kubernetes restarts it as a fresh candidate).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import pathlib
import signal
import sys
import warnings
from collections.abc import Sequence

import attrs

from kubetrain.api import naming, validation
from kubetrain.operator import (
    accelerators,
    progress_reader,
    projection,
    scheduling,
    trainingjob_controller,
    webhook_endpoints,
    webhooks,
)
from kubetrain.operator.policies import avoid, progress
from kubetrain.operator.resources import Resource
from kubetrain.operator.runtime import (
    cache,
    client,
    controller,
    leaderelection,
    logs,
    manager,
    reconcile,
    tracing,
    workqueue,
)

__all__ = ["main", "parser"]

log = logging.getLogger("kubetrain.operator")

CHILD_SELECTOR = naming.JOB_NAME  # every child of a job carries it
# The Lease timings' defaults, client-go's (docs/deploy.md, "Leader election").
LEASE = leaderelection.Config(name="", namespace="", identity="")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kubetrain-operator", description="Run the kubetrain operator.")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    p.add_argument("--namespace", help="watch only this namespace (default: all)")
    p.add_argument("--leader-elect", action="store_true", help="elect one active replica through a Lease")
    p.add_argument("--leader-election-namespace", default="kubetrain-system")
    p.add_argument("--leader-election-id", default="kubetrain-operator-leader")
    # client-go's names and rules: a candidate takes a Lease unchanged for the lease duration, a
    # leader that cannot renew within the renew deadline steps down, both try every retry period.
    p.add_argument(
        "--leader-elect-lease-duration",
        type=_whole_seconds,
        default=LEASE.lease_duration,
        help="seconds a candidate waits on a Lease that stopped changing before taking it (whole "
        f"seconds, as the Lease stores them; default {LEASE.lease_duration:g})",
    )
    p.add_argument(
        "--leader-elect-renew-deadline",
        type=_positive,
        default=LEASE.renew_deadline,
        help="seconds a leader keeps trying to renew before it stops writing and steps down "
        f"(less than the lease duration; default {LEASE.renew_deadline:g})",
    )
    p.add_argument(
        "--leader-elect-retry-period",
        type=_positive,
        default=LEASE.retry_period,
        help=f"seconds between two tries to take or renew the Lease (default {LEASE.retry_period:g})",
    )
    # A pass mostly waits on the apiserver: 16 in flight keep up with 2,000 jobs arriving at once
    # (docs/performance.md, "The operator's own limits"), and an idle one costs nothing.
    p.add_argument("--max-concurrent-reconciles", type=int, default=16)
    p.add_argument("--metrics-bind-address", default=":8080", help="host:port, or 0 to disable")
    p.add_argument("--health-probe-bind-address", default=":8081", help="host:port, or 0 to disable")
    p.add_argument("--webhook-port", type=int, default=9443, help="0 disables the webhook server")
    p.add_argument(
        "--cert-dir", type=pathlib.Path, default=pathlib.Path("/tmp/k8s-webhook-server/serving-certs")
    )
    p.add_argument(
        "--accelerator-config",
        type=pathlib.Path,
        help="YAML: env and host volumes for containers requesting a resource (e.g. nvidia.com/gpu)",
    )
    p.add_argument(
        "--webhook-self-signed",
        action="store_true",
        help="no cert-manager: make a CA and serving certificate in --cert-dir and inject the CA",
    )
    p.add_argument(
        "--webhook-host",
        action="append",
        default=[],
        help="a DNS name or IP for the self-signed serving certificate (repeatable; "
        "default: the webhook Service's names in --leader-election-namespace)",
    )
    p.add_argument("--webhook-configuration", default=webhook_endpoints.CONFIGURATION_NAME)
    p.add_argument("--mutating-webhook-configuration", default=webhook_endpoints.MUTATING_CONFIGURATION_NAME)
    p.add_argument(
        "--gang-scheduler",
        default=scheduling.registry.AUTO,
        choices=scheduling.registry.CHOICES,
        help="what places a job's pods together: auto (the first the cluster serves of native, "
        "coscheduling, volcano; else none), or one of them outright",
    )
    p.add_argument(
        "--kueue",
        default=scheduling.backend.WORKLOAD_ROUTE,
        choices=scheduling.backend.KUEUE_ROUTES,
        help="how a job in a Kueue queue (schedulingPolicy.queue) waits: as its own Workload, admitted "
        "whole and resumed on admission (workload), or as Kueue plain-pod groups (pods)",
    )
    p.add_argument(
        "--coscheduling-scheduler-name",
        default=scheduling.coscheduling.SCHEDULER_NAME,
        help="schedulerName of the scheduler-plugins scheduler (with --gang-scheduler=coscheduling)",
    )
    # client-go's 20/30 would hold 2,000 starting jobs (10 writes each) for over 15 minutes: at 500
    # jobs they took 249 s instead of 17 s, with a status lag p99 of 5.9 s. The apiserver's own
    # priority and fairness is what protects it; this limit only stops a runaway loop.
    p.add_argument("--kube-api-qps", type=float, default=500.0)
    p.add_argument("--kube-api-burst", type=int, default=1000)
    p.add_argument(
        "--unhealthy-node-conditions",
        type=_names,
        default=avoid.DEFAULT_CONDITIONS,
        help="node condition types that, when True, keep new pods off the node (comma-separated; "
        f"'' for none; default: {','.join(avoid.DEFAULT_CONDITIONS)})",
    )
    p.add_argument(
        "--unhealthy-node-taints",
        type=_names,
        default=avoid.DEFAULT_TAINTS,
        help="taint keys that keep new pods off a node even when they tolerate them (comma-separated; "
        f"'' for none; default: {','.join(avoid.DEFAULT_TAINTS)})",
    )
    p.add_argument(
        "--node-notice-taints",
        type=_names,
        default=avoid.DEFAULT_NOTICE_TAINTS,
        help="taint keys that say a node will go (a spot interruption, maintenance): jobs with "
        "spec.checkpoint checkpoint, then move off it (comma-separated; '' for none; default: "
        f"{','.join(avoid.DEFAULT_NOTICE_TAINTS)})",
    )
    p.add_argument(
        "--node-notice-conditions",
        type=_names,
        default=avoid.DEFAULT_NOTICE_CONDITIONS,
        help="node condition types that, when True, say the same (comma-separated; default: none)",
    )
    p.add_argument(
        "--progress-interval",
        type=_positive,
        default=progress.DEFAULT_INTERVAL_SECONDS,
        help="seconds between two reads of a running job's progress (spec.progress), and so at most "
        f"one status write per job per this long for progress (default {progress.DEFAULT_INTERVAL_SECONDS:g})",
    )
    p.add_argument(
        "--progress-reads-per-second",
        type=_positive,
        default=progress_reader.DEFAULT_BUDGET,
        help="progress reads a second for the whole operator, and so status writes for progress at most; "
        "with more running jobs than this times --progress-interval, each is read every jobs/this "
        f"seconds instead (default {progress_reader.DEFAULT_BUDGET:g})",
    )
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--log-format", default="json", choices=["json", "text"])
    return p


def lease_config(args: argparse.Namespace, identity: str) -> leaderelection.Config:
    """The Lease this replica competes for, with the timings of its flags."""
    return leaderelection.Config(
        name=args.leader_election_id,
        namespace=args.leader_election_namespace,
        identity=identity,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
    )


def _lease_timings_error(args: argparse.Namespace) -> str | None:
    """Why the Lease timings cannot work, as client-go checks them; None if they can."""
    if not args.leader_elect_lease_duration > args.leader_elect_renew_deadline:
        return "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline"
    # client-go: the renew deadline must leave room for a jittered retry (1.2 x the period).
    if not args.leader_elect_renew_deadline > 1.2 * args.leader_elect_retry_period:
        return "--leader-elect-renew-deadline must be greater than 1.2 x --leader-elect-retry-period"
    return None


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def _whole_seconds(text: str) -> float:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of seconds, at least 1, got {text}")
    return float(text)


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


def build(
    api: client.Client,
    args: argparse.Namespace,
    accelerator_config: accelerators.Config | None = None,
    scheduler: scheduling.backend.Backend = scheduling.backend.NONE,
    *,
    workloads_served: bool = False,
) -> manager.Manager:
    options = manager.Options(
        namespace=args.namespace,
        leader_elect=args.leader_elect,
        leader_election_id=args.leader_election_id,
        leader_election_namespace=args.leader_election_namespace,
        metrics_bind_address=args.metrics_bind_address,
        health_probe_bind_address=args.health_probe_bind_address,
        webhook_port=args.webhook_port,
        cert_dir=args.cert_dir,
    )
    mgr = manager.Manager(api, attrs.evolve(options, lease=lease_config(args, options.identity)))
    # Each cache keeps only what the operator reads of its kind (kubetrain.operator.projection).
    jobs = mgr.informer(client.TRAININGJOBS, transform=projection.training_job)
    children = {
        r: mgr.informer(
            r, label_selector=CHILD_SELECTOR, indexers={"owner": cache.by_owner()}, transform=t, carry=carry
        )
        for r, t, carry in (
            (client.PODS, projection.pod, projection.carry_pod),
            (client.SERVICES, projection.service, None),
            (client.CONFIGMAPS, projection.config_map, None),
        )
    }
    # Pods that vanish between two reconciles are still counted, through their tombstones.
    tombstones = cache.Tombstones(cache.by_owner())
    children[client.PODS].add_handler(tombstones.handler)
    # The first ranks' progress (spec.progress), read beside the reconcile workers.
    reader = progress_reader.Reader(
        api, interval=args.progress_interval, budget=args.progress_reads_per_second
    )
    # Kueue's Workload route: the jobs' Workloads, and the flavors their admissions name.
    workloads = flavors = priorities = None
    if workloads_served:
        workloads = mgr.informer(
            scheduling.workload.WORKLOADS,
            label_selector=CHILD_SELECTOR,
            indexers={"owner": cache.by_owner()},
            transform=projection.workload,
        )
        flavors = mgr.informer(scheduling.workload.RESOURCE_FLAVORS, transform=projection.resource_flavor)
        priorities = mgr.informer(scheduling.workload.PRIORITY_CLASSES, transform=projection.priority_class)
    reconciler = trainingjob_controller.TrainingJobReconciler(
        api,
        jobs=jobs,
        pods=children[client.PODS],
        services=children[client.SERVICES],
        config_maps=children[client.CONFIGMAPS],
        nodes=mgr.informer(client.NODES, transform=projection.node),
        unhealthy=avoid.Unhealthy(
            conditions=frozenset(args.unhealthy_node_conditions), taints=frozenset(args.unhealthy_node_taints)
        ),
        notice=avoid.Unhealthy(
            conditions=frozenset(args.node_notice_conditions), taints=frozenset(args.node_notice_taints)
        ),
        tombstones=tombstones,
        accelerator_config=accelerator_config,
        scheduler=scheduler,
        reader=reader,
        workloads=workloads,
        flavors=flavors,
        priorities=priorities,
    )
    if mgr.webhooks is not None:
        webhooks.register(mgr.webhooks, api, accelerator_config)
    # A job's Services and ConfigMap matter by being there: made by its own pass, only their
    # deletion needs it again. Every change to its pods does.
    owned = [
        controller.OwnedKind(i, client.TRAININGJOBS.kind, events=None if r is client.PODS else {"DELETED"})
        for r, i in children.items()
    ]
    if workloads is not None:
        # Every change of a Workload's status (admitted, evicted) is the job's business.
        owned.append(controller.OwnedKind(workloads, client.TRAININGJOBS.kind))
    trainingjobs = controller.Controller(
        "trainingjob", reconciler, jobs, owned, workers=args.max_concurrent_reconciles
    )
    # Progress fills idle time: no read while other passes wait, and a new reading asks for the
    # job's pass behind every change of state and every new job.
    reader.listen(
        lambda ns, name: trainingjobs.queue.add(reconcile.Request(ns, name), workqueue.BACKGROUND),
        busy=lambda: trainingjobs.queue.highest_waiting() not in (None, workqueue.BACKGROUND),
    )
    mgr.add(trainingjobs)
    mgr.add(reader)
    return mgr


async def run(args: argparse.Namespace) -> int:
    logs.configure(args.log_level, args.log_format)
    provider = tracing.configure()
    # Config files are read before anything starts, so a bad one stops the process at once.
    accelerator_config = accelerators.load(args.accelerator_config) if args.accelerator_config else None
    api = await client.Client.connect(args.kubeconfig, qps=args.kube_api_qps, burst=args.kube_api_burst)
    if args.webhook_self_signed and args.webhook_port:
        service = f"{webhook_endpoints.SERVICE}.{args.leader_election_namespace}.svc"
        ca = webhooks.certificates.write(
            args.cert_dir, args.webhook_host or [service, f"{service}.cluster.local"]
        )
        await webhooks.certificates.inject(
            api, ca, args.webhook_configuration, args.mutating_webhook_configuration
        )
    if args.gang_scheduler == scheduling.registry.AUTO:
        scheduler = await detect(api, args.namespace, scheduler_name=args.coscheduling_scheduler_name)
    else:
        scheduler = scheduling.registry.get(
            args.gang_scheduler, scheduler_name=args.coscheduling_scheduler_name
        )
        if scheduler.name == "native":  # the API version this cluster serves, if any
            scheduler = await _first_served(api, args.namespace, scheduling.native.BACKENDS) or scheduler
    scheduler = attrs.evolve(scheduler, kueue=args.kueue)
    # The Workload route watches Workloads where Kueue is installed; where it is not, a job in a
    # queue says so (its Workload is refused as not served).
    workloads_served = args.kueue == scheduling.backend.WORKLOAD_ROUTE and await served(
        api, scheduling.workload.WORKLOADS, args.namespace
    )
    if args.kueue == scheduling.backend.WORKLOAD_ROUTE and not workloads_served:
        log.info(
            "Kueue is not installed (no Workload API): jobs in a queue will say so until it is and this restarts"
        )
    mgr = build(api, args, accelerator_config, scheduler, workloads_served=workloads_served)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    log.info(
        "starting kubetrain-operator (namespace=%s, leader-elect=%s)",
        args.namespace or "*",
        args.leader_elect,
    )
    try:
        return await mgr.run(stop)
    finally:
        await api.close()
        if provider is not None:
            provider.shutdown()
        log.info("kubetrain-operator stopped")


async def served(api: client.Client, resource: Resource, namespace: str | None = None) -> bool:
    """Whether the apiserver serves ``resource`` (a list of one item succeeds)."""
    try:
        await api.list(resource, namespace, limit="1")
    except client.ApiError as e:
        if e.not_found:
            return False
        raise
    return True


async def detect(
    api: client.Client,
    namespace: str | None = None,
    *,
    scheduler_name: str = scheduling.coscheduling.SCHEDULER_NAME,
) -> scheduling.backend.Backend:
    """``--gang-scheduler=auto``: the first backend the cluster serves, in the order of
    :data:`~kubetrain.operator.scheduling.registry.CHOICES`, asked once at start (here, as the
    scheduling package itself is pure: ``kubetrain render`` uses it with no cluster)."""
    for name in scheduling.registry.CHOICES[1:-1]:
        candidates = (
            scheduling.native.BACKENDS
            if name == "native"
            else (scheduling.registry.get(name, scheduler_name=scheduler_name),)
        )
        found = await _first_served(api, namespace, candidates)
        if found is not None:
            return found
    log.info("gang scheduling: none (no PodGroup API is served)")
    return scheduling.backend.NONE


async def _first_served(
    api: client.Client, namespace: str | None, candidates: Sequence[scheduling.backend.Backend]
) -> scheduling.backend.Backend | None:
    """The first of ``candidates`` whose group API the cluster serves (native: newest version first)."""
    for candidate in candidates:
        assert candidate.resource is not None
        if await served(api, candidate.resource, namespace):
            log.info("gang scheduling: %s (%s served)", candidate.name, candidate.resource.api_version)
            return candidate
    return None


def main(argv: Sequence[str] | None = None) -> int:
    # kr8s 0.20 has tested Kubernetes up to 1.35; warn in our logs, not on stderr, about newer ones.
    warnings.filterwarnings("ignore", message="Kubernetes version .* is not supported")
    p = parser()
    args = p.parse_args(argv)
    if (why := _lease_timings_error(args)) is not None:
        p.error(why)
    try:
        return asyncio.run(run(args))
    except (validation.ValidationError, OSError) as e:  # bad flags or config files: say so, no traceback
        print(f"kubetrain-operator: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
