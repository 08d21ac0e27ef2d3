"""The flags that pick a cluster and a namespace, and the client they make.

Every verb that talks to a cluster takes ``--kubeconfig``, ``--context`` and
``-n/--namespace`` after its name, as kubectl's do, worded the same everywhere (they are added
here alone); ``migrate-storage``, which rewrites every namespace, takes the first two. Without
them the client finds the cluster as kubectl would (``$KUBECONFIG``, ``~/.kube/config``, in a
pod its service account) and uses the context's namespace.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubetrain import client

__all__ = ["add_flags", "connect", "namespace_flag"]

KUBECONFIG_HELP = "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)"
CONTEXT_HELP = "kubeconfig context (default: the current one)"
NAMESPACE_HELP = "namespace (default: the context's, else default)"


def add_flags(p: argparse.ArgumentParser, *, namespace: bool = True) -> None:
    """``--kubeconfig``, ``--context`` and (with ``namespace``) ``-n/--namespace`` on ``p``."""
    g = p.add_argument_group("cluster")
    g.add_argument("--kubeconfig", metavar="FILE", help=KUBECONFIG_HELP)
    g.add_argument("--context", metavar="NAME", help=CONTEXT_HELP)
    if namespace:
        g.add_argument("-n", "--namespace", metavar="NAME", help=NAMESPACE_HELP)


def connect(args: argparse.Namespace) -> client.Client:
    from kubetrain import client

    return client.connect(args.kubeconfig, namespace=args.namespace, context=args.context)


def namespace_flag(namespace: str | None) -> str:
    """`` -n NS`` for a command suggested to the user, when they named a namespace themselves."""
    return f" -n {namespace}" if namespace else ""
