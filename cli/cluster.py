"""The flags that pick a cluster and a namespace, and the client they make.

Every verb that talks to a cluster takes ``--kubeconfig``, ``--context`` and
``-n/--namespace`` after its name, as kubectl's do; without them the client finds the
cluster as kubectl would (``$KUBECONFIG``, ``~/.kube/config``, in a pod its service account)
and uses the context's namespace.
"""

from __future__ import annotations

import argparse

from kubetrain import client

__all__ = ["connect", "flags", "namespace_flag"]


def flags() -> argparse.ArgumentParser:
    """A parent parser holding the cluster flags, for ``add_parser(..., parents=[flags()])``."""
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("cluster")
    g.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
    g.add_argument("--context", help="kubeconfig context (default: the current one)")
    g.add_argument("-n", "--namespace", help="namespace (default: the context's, else default)")
    return p


def connect(args: argparse.Namespace) -> client.Client:
    return client.connect(args.kubeconfig, namespace=args.namespace, context=args.context)


def namespace_flag(namespace: str | None) -> str:
    """`` -n NS`` for a command suggested to the user, when they named a namespace themselves."""
    return f" -n {namespace}" if namespace else ""
