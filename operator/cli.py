"""The ``kubetrain`` command.

``kubetrain render FILE`` prints every object the operator would create for the
TrainingJob(s) in FILE (either API version; ``-`` reads standard input) — no cluster
needed; ``--gang-scheduler`` says for which gang scheduler (native unless told). ``kubetrain manifests`` regenerates the CRD from the API types, and the state
diagram from the lifecycle's transition table; with ``--check`` it only reports whether
the checked-in files are current. ``kubetrain migrate-storage`` rewrites every stored
TrainingJob as v1beta1 (see ``migration``). ``kubetrain dev up|run|down|kubeconfig`` runs a
local cluster (``kubetrain.devcluster.dev``, imported only by those commands). Bad input is
reported as ``error: path: message`` lines and exit status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import yaml

from kubetrain.api import crd, scheme, validation
from kubetrain.operator import documents, lifecycle, migration, render, scheduling
from kubetrain.operator.frameworks import registry
from kubetrain.operator.runtime import client

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (
        validation.ValidationError,
        documents.DocumentError,
        registry.UnknownFrameworkError,
        yaml.YAMLError,
        OSError,  # a missing binary of the local cluster too
        client.ApiError,
    ) as e:
        for line in str(e).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kubetrain", description="Distributed training on Kubernetes.")
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    p = sub.add_parser("render", help="print the objects the operator would create for a TrainingJob")
    p.add_argument("file", help="YAML with one or more TrainingJobs (v1alpha1 or v1beta1); - for stdin")
    p.add_argument(
        "--gang-scheduler",
        default="native",
        choices=scheduling.registry.CHOICES[1:],
        help="the operator's --gang-scheduler to render for (default: native, what auto finds where it is served)",
    )
    p.set_defaults(run=_render)

    p = sub.add_parser("manifests", help="regenerate the CRD from the API types")
    p.add_argument("--root", default=".", help="the repository root (default: .)")
    p.add_argument("--check", action="store_true", help="only fail if the checked-in CRD is stale")
    p.set_defaults(run=_manifests)

    p = sub.add_parser(
        "migrate-storage",
        help="rewrite every stored TrainingJob as v1beta1, then drop v1alpha1 from storedVersions",
    )
    p.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    p.set_defaults(run=_migrate_storage)

    p = sub.add_parser(
        "dev", help="a local cluster (control plane, kwok and real nodes) for trying kubetrain"
    )
    dev_sub = p.add_subparsers(required=True, metavar="ACTION")
    up = dev_sub.add_parser("up", help="start it and stay in the foreground until Ctrl-C")
    up.add_argument("--tier", choices=["apiserver", "cluster"], default="cluster")
    up.add_argument("--nodes", type=int, default=2, help="kwok fake nodes (cluster tier)")
    up.add_argument("--real-nodes", type=int, default=0, help="real nodes: kubelet + containerd (as root)")
    up.set_defaults(run=lambda a: _dev().up(_tier(a.tier), a.nodes, real_nodes=a.real_nodes))
    run = dev_sub.add_parser(
        "run", help="up, plus config/default, the samples, and their logs, watched like kubectl get -w"
    )
    run.add_argument("samples", nargs="*", type=pathlib.Path, help="TrainingJob files to apply")
    run.add_argument(
        "--config", type=pathlib.Path, default=pathlib.Path("config"), help="the repository's config/"
    )
    run.add_argument("--nodes", type=int, default=0, help="kwok fake nodes (2 if real nodes cannot start)")
    run.add_argument("--real-nodes", type=int, default=1, help="real nodes (0: kwok only)")
    run.set_defaults(
        run=lambda a: _dev().up(
            _tier("cluster"), a.nodes, real_nodes=a.real_nodes, config_dir=a.config, samples=a.samples
        )
    )
    dev_sub.add_parser("down", help="stop the running one").set_defaults(run=lambda a: _dev().down())
    dev_sub.add_parser("kubeconfig", help="print the path of its admin kubeconfig").set_defaults(
        run=_kubeconfig
    )
    return parser


def _dev() -> Any:
    # Dev tooling, imported only when asked for: the operator's own code never needs it.
    from kubetrain.devcluster import dev

    return dev


def _tier(name: str) -> Any:
    from kubetrain.devcluster import cluster

    return cluster.Tier(name)


def _kubeconfig(_args: argparse.Namespace) -> int:
    path = _dev().kubeconfig_path()
    if not path.exists():
        print("error: no dev cluster is up; run `kubetrain dev up`", file=sys.stderr)
        return 1
    print(path)
    return 0


def _render(args: argparse.Namespace) -> int:
    objects: list[dict[str, Any]] = []
    scheduler = scheduling.registry.get(args.gang_scheduler)
    for doc in documents.load(args.file):
        try:
            job = scheme.to_hub(scheme.decode(doc.data))
            objects.extend(render.render(job, registry.default().get(job.spec.framework.name), scheduler))
        except validation.ValidationError as e:
            raise doc.explain(e) from None
        except registry.UnknownFrameworkError as e:
            raise doc.explain(validation.ValidationError.at(("spec", "framework", "name"), str(e))) from None
    _dump(objects, sys.stdout)
    return 0


def _dump(objects: list[dict[str, Any]], out: TextIO) -> None:
    yaml.safe_dump_all(objects, out, sort_keys=False, width=120)


def _migrate_storage(args: argparse.Namespace) -> int:
    async def run() -> migration.Report:
        return await migration.migrate(await client.Client.connect(args.kubeconfig))

    report = asyncio.run(run())
    print(
        f"{report.objects} TrainingJob(s) read, {report.rewritten} rewritten as {migration.STORAGE_VERSION}; "
        f"storedVersions is now [{migration.STORAGE_VERSION}]"
    )
    return 0


def _manifests(args: argparse.Namespace) -> int:
    generated = {
        pathlib.Path(args.root) / crd.CRD_PATH: crd.render(),
        pathlib.Path(args.root) / STATE_DIAGRAM_PATH: _state_diagram(),
    }
    if args.check:
        stale = [p for p, text in generated.items() if not p.exists() or p.read_text() != text]
        for path in stale:
            print(f"{path} is stale: run `make manifests`", file=sys.stderr)
        return 1 if stale else 0
    for path, text in generated.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}")
    return 0


STATE_DIAGRAM_PATH = "docs/state-diagram.md"


def _state_diagram() -> str:
    rows = "\n".join(f"| {a.value} | {b.value} |" for a, b in sorted(lifecycle.TRANSITIONS))
    return (
        "# TrainingJob states\n\n"
        "Generated by `make manifests` from `kubetrain.operator.lifecycle.TRANSITIONS`; the property\n"
        "tests check that every change of state the operator makes is one of these.\n"
        "See [lifecycle.md](lifecycle.md) for what causes each.\n\n"
        f"```mermaid\n{lifecycle.diagram()}```\n\n"
        f"| from | to |\n|---|---|\n{rows}\n"
    )


if __name__ == "__main__":
    sys.exit(main())
