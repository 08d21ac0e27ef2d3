"""``kubetrain dev up|run|down|kubeconfig|images``: a local cluster for trying kubetrain.

The work is :mod:`kubetrain.devcluster.dev`'s, imported only when one of these runs: the
job verbs never need the local cluster's tooling.
"""

from __future__ import annotations

import argparse
import pathlib
from typing import Any

from kubetrain.cli import errors

__all__ = ["arguments"]


def arguments(_verb: str, p: argparse.ArgumentParser) -> None:
    dev_sub = p.add_subparsers(required=True, metavar="ACTION")
    up = dev_sub.add_parser("up", help="start it and stay in the foreground until Ctrl-C")
    up.add_argument("--tier", choices=["apiserver", "cluster"], default="cluster")
    up.add_argument("--nodes", type=int, default=2, help="kwok fake nodes (cluster tier)")
    up.add_argument("--real-nodes", type=int, default=0, help="real nodes: kubelet + containerd (as root)")
    _seed_images(up)
    up.set_defaults(
        run=lambda a: _dev().up(_tier(a.tier), a.nodes, real_nodes=a.real_nodes, seed_images=a.seed_images)
    )
    run = dev_sub.add_parser(
        "run", help="up, plus config/default, the samples, and their logs, watched like kubectl get -w"
    )
    run.add_argument("samples", nargs="*", type=pathlib.Path, help="TrainingJob files to apply")
    run.add_argument(
        "--config", type=pathlib.Path, default=pathlib.Path("config"), help="the repository's config/"
    )
    run.add_argument("--nodes", type=int, default=0, help="kwok fake nodes (2 if real nodes cannot start)")
    run.add_argument("--real-nodes", type=int, default=1, help="real nodes (0: kwok only)")
    _seed_images(run)
    run.set_defaults(
        run=lambda a: _dev().up(
            _tier("cluster"),
            a.nodes,
            real_nodes=a.real_nodes,
            config_dir=a.config,
            samples=a.samples,
            seed_images=a.seed_images,
        )
    )
    built = dev_sub.add_parser(
        "images", help="build the images real nodes hold, ahead of the first start (as root; cached)"
    )
    _seed_images(built)
    built.set_defaults(run=lambda a: _dev().build_images(seed_images=a.seed_images))
    dev_sub.add_parser("down", help="stop the running one").set_defaults(run=lambda a: _dev().down())
    dev_sub.add_parser("kubeconfig", help="print the path of its admin kubeconfig").set_defaults(
        run=_kubeconfig
    )


def _seed_images(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--seed-images",
        action="store_true",
        help="real nodes also hold stand-ins of the images samples/legacy's TfJob, MXJob and ChainerJob "
        "name, so that their converted files train (the first start builds them: several minutes more)",
    )


def _dev() -> Any:
    from kubetrain.devcluster import dev

    return dev


def _tier(name: str) -> Any:
    from kubetrain.devcluster import cluster

    return cluster.Tier(name)


def _kubeconfig(_args: argparse.Namespace) -> int:
    path = _dev().kubeconfig_path()
    if not path.exists():
        raise errors.CommandError("no dev cluster is up; run `kubetrain dev up`")
    print(path)
    return 0
