"""Hostile-input benchmark: 10,000 generated documents through the real apiserver and kubetrain's webhooks.

Starts a cluster of its own with kwok nodes and deploys ``config/default`` the way the e2e
deploy test does (the manager as a local process with the Deployment's ServiceAccount,
serving the conversion, validating and expanding webhooks and the runtimes' webhook:
:mod:`kubetrain_bench.deployment`), then sends the documents of
:mod:`kubetrain_bench.hostile.generator` — the samples of both versions, short jobs made from
the shipped runtimes and copies of those runtimes (``--mix``), mutated 1-3 times each, one in
ten unmutated — with ``--concurrency`` documents in flight (:mod:`kubetrain_bench.hostile.runner`).

Prints, per outcome class (rejected with a path, rejected without one, accepted,
accepted but unrunnable, 5xx), per family, version, sample and mutation kind, the top
rejection messages, the create call's latency (p50/p99), the total time, the manager's
tracebacks and whether a v1alpha1 LIST of the namespace ever failed, with one example of
every kind of failure. Exits 1 if anything was accepted but unrunnable, answered 5xx,
crashed the manager or broke a v1alpha1 list.
"""

from __future__ import annotations

import argparse
import pathlib
import time

from kubetrain_bench import deployment
from kubetrain_bench.console import log
from kubetrain_bench.hostile import generator, report, runner

NAMESPACE = "hostile"


def _mix(text: str) -> dict[str, float]:
    try:
        mix = {k.strip(): float(v) for k, v in (part.split("=") for part in text.split(","))}
    except ValueError:
        raise argparse.ArgumentTypeError(f"not FAMILY=SHARE,...: {text!r}") from None
    unknown = set(mix) - set(generator.FAMILIES)
    if unknown or not any(v > 0 for v in mix.values()):
        raise argparse.ArgumentTypeError(f"families are {', '.join(generator.FAMILIES)}, one share above 0")
    return mix


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--count", type=int, default=10000, help="documents to send (default 10000)")
    p.add_argument("--seed", type=int, default=12, help="the generator's seed (default 12)")
    p.add_argument(
        "--mix",
        type=_mix,
        default=generator.MIX,
        help="each family's share, e.g. short=0.6,runtime=0.4 (default "
        + ",".join(f"{k}={v:g}" for k, v in generator.MIX.items())
        + "): whole jobs, short jobs made from runtimes, runtimes",
    )
    p.add_argument("--concurrency", type=int, default=8, help="creates in flight at once (default 8)")
    p.add_argument(
        "--checks", type=int, default=16, help="accepted jobs checked (pods, Services) at once (default 16)"
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds an accepted job has to make its pods (default 30)",
    )
    p.add_argument("--nodes", type=int, default=8, help="kwok nodes, 8 GPUs each (default 8)")
    p.add_argument("--json", type=pathlib.Path, help="also write the figures and every failure to this file")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    log(f"starting a cluster with {args.nodes} kwok nodes and config/default")
    with deployment.deployment(nodes=args.nodes) as d:
        d.namespace(NAMESPACE)
        log(
            f"deployed in {time.perf_counter() - started:.1f}s; sending {args.count} documents (seed {args.seed})"
        )
        result = runner.run(
            d,
            NAMESPACE,
            generator.documents(args.seed, args.count, mix=args.mix, namespace=NAMESPACE),
            concurrency=args.concurrency,
            checks=args.checks,
            timeout=args.timeout,
            progress=log,
        )
    mix = ", ".join(f"{k} {v:g}" for k, v in args.mix.items())
    print(f"hostile input: seed {args.seed} ({mix}), concurrency {args.concurrency}, {args.nodes} kwok nodes")
    print(result.format())
    print(f"\ntotal (cluster, deployment, documents): {time.perf_counter() - started:.1f}s")
    if args.json:
        args.json.write_text(report.to_json(result))
        print(f"figures and failures written to {args.json}")
    if not result.ok():
        print(
            "FAILED: accepted but unrunnable, 5xx, manager tracebacks or a failed v1alpha1 list (see above)"
        )
        return 1
    return 0
