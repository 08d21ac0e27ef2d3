"""The kubeconfig a client is pointed at, checked before kr8s reads it.

kr8s reads a kubeconfig as it finds it: one that is not YAML, not a map, or whose context
names no cluster fails inside it with yaml's, Python's or httpx's own exceptions, and a
kubeconfig that is not there falls through to "Unable to find valid credentials".
:func:`check` reads the files kr8s will read — ``--kubeconfig`` (``:`` between several), else
``$KUBECONFIG``, else ``~/.kube/config`` — through kubetrain's one reading path
(:mod:`kubetrain.api.documents`: bounded, with lines), follows the context to its cluster and
user as kr8s does, and says what is wrong in a person's words: an
:class:`~kubetrain.client.errors.InvalidKubeconfig` naming the file, the line and the field,
or :class:`~kubetrain.client.errors.Unreachable` when there is no kubeconfig at all (and no
service account of a pod). It returns the server's address, for the message when nothing
answers there.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Mapping
from typing import Any

from kubetrain.api import documents, validation
from kubetrain.client import errors

__all__ = ["DEFAULT", "SERVICE_ACCOUNT", "check"]

DEFAULT = "~/.kube/config"
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
SECTIONS = (("clusters", "cluster"), ("contexts", "context"), ("users", "user"))
HINT = "`kubetrain dev kubeconfig` prints the dev cluster's"


def check(kubeconfig: str | None, context: str | None) -> str:
    """The server the kubeconfig's context points at; raises if it cannot be used."""
    given = kubeconfig is not None
    env = os.environ.get("KUBECONFIG")
    spec = kubeconfig if given else env or DEFAULT
    paths = [p for p in str(spec).split(":") if p]  # as kr8s splits them
    found = [p for p in paths if pathlib.Path(p).expanduser().exists()]
    if given:
        for p in paths:
            if p not in found:
                raise errors.InvalidKubeconfig(f"kubeconfig {p}: No such file or directory")
    if not found:
        if os.path.isdir(SERVICE_ACCOUNT) and os.environ.get("KUBERNETES_SERVICE_HOST"):
            return f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ.get('KUBERNETES_SERVICE_PORT', '443')}"
        where = f"$KUBECONFIG ({spec}) names no file that exists" if env else f"{DEFAULT} does not exist"
        raise errors.Unreachable(f"no cluster: no kubeconfig ({where}) and not in a pod; {HINT}")
    docs = [_read(p) for p in found]
    return _server(docs, context)


def _read(path: str) -> documents.Document:
    try:
        docs = documents.load(str(pathlib.Path(path).expanduser()))
    except documents.DocumentError as e:
        raise errors.InvalidKubeconfig(f"kubeconfig {e}") from None
    doc = docs[0]
    if len(docs) > 1:
        raise _at(docs[1], (), "a kubeconfig is one document; this is another")
    if not isinstance(doc.data, Mapping):
        raise _at(doc, (), f"expected a map (a kubeconfig), got {_kind(doc.data)}")
    for section, inner in SECTIONS:
        items = doc.data.get(section)
        if items is None:
            continue
        if not isinstance(items, list):
            raise _at(doc, (section,), f"expected a list, got {_kind(items)}")
        for i, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise _at(doc, (section, i), f"expected a map, got {_kind(item)}")
            if not isinstance(item.get("name"), str):
                raise _at(doc, (section, i, "name"), "expected the name, a string")
            if not isinstance(item.get(inner, {}), Mapping):
                raise _at(doc, (section, i, inner), f"expected a map, got {_kind(item[inner])}")
    return doc


def _server(docs: list[documents.Document], context: str | None) -> str:
    first = docs[0]
    name = context
    if name is None:
        name = first.data.get("current-context")
        if not isinstance(name, str) or not name:
            raise _at(first, ("current-context",), "not set: give --context NAME, or set it")
    found = _named(docs, "contexts", name)
    if found is None:
        known = _names(docs, "contexts")
        if context is not None:
            raise errors.InvalidKubeconfig(
                f"kubeconfig {first.source}: no context named {name!r} (it has {known or 'none'})"
            )
        raise _at(first, ("current-context",), f"no context named {name!r} (it has {known or 'none'})")
    doc, i, ctx = found
    body = ctx.get("context") or {}
    for field, section in (("cluster", "clusters"), ("user", "users")):
        value = body.get(field)
        if not isinstance(value, str):
            raise _at(doc, ("contexts", i, "context", field), "expected the name of one of its " + section)
        if _named(docs, section, value) is None:
            known = _names(docs, section)
            raise _at(
                doc,
                ("contexts", i, "context", field),
                f"no {field} named {value!r} (it has {known or 'none'})",
            )
    cdoc, j, cluster = _named(docs, "clusters", body["cluster"]) or (doc, 0, {})
    server = (cluster.get("cluster") or {}).get("server")
    if not isinstance(server, str) or not server:
        raise _at(
            cdoc,
            ("clusters", j, "cluster", "server"),
            "expected the server's address, e.g. https://host:6443",
        )
    return server


def _named(
    docs: list[documents.Document], section: str, name: str
) -> tuple[documents.Document, int, Mapping[str, Any]] | None:
    for doc in docs:
        for i, item in enumerate(doc.data.get(section) or []):
            if item.get("name") == name:
                return doc, i, item
    return None


def _names(docs: list[documents.Document], section: str) -> str:
    return ", ".join(str(item.get("name")) for doc in docs for item in doc.data.get(section) or [])


def _at(doc: documents.Document, path: tuple[str | int, ...], message: str) -> errors.InvalidKubeconfig:
    shown = f"{validation.format_path(path)}: " if path else ""
    return errors.InvalidKubeconfig(f"kubeconfig {doc.where(path)}: {shown}{message}")


def _kind(value: Any) -> str:
    return {dict: "a map", list: "a list", str: "a string", type(None): "nothing"}.get(
        type(value), repr(value)
    )
