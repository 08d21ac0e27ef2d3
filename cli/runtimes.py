"""``kubetrain runtimes``: what a job can be made from, and what it must give.

A platform team installs runtimes — ClusterTrainingRuntimes for every namespace, TrainingRuntimes
for one — and a person makes a short job from one (``kubetrain submit --runtime NAME``). This
verb lists the ClusterTrainingRuntimes and the TrainingRuntimes of the namespace (``-n``, else the
context's) as a table: NAME, KIND, FRAMEWORK, REPLICAS (each replica type with its replicas),
NODE TYPE (the replica type ``--nodes`` sizes), and JOB GIVES — what the runtime leaves to the
job (``image``, ``command``: :func:`kubetrain.operator.expansion.needs`). A runtime that builds on
another is shown as the two merged, as a job made from it would be. ``NAME...`` shows only those;
``-o yaml|json|name`` prints the objects as stored instead.

:func:`rows` is pure (the runtimes as stored in, the table out); it loads the operator's
expansion, a pure part, only when it runs. A cluster without the runtime kinds, or a user who
may not list them, is one ``error:`` line (the client says which).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from kubetrain.api import v1beta1, validation
from kubetrain.cli import cluster, errors, output

__all__ = ["arguments", "dump", "rows"]

Kind = v1beta1.RuntimeKind


def arguments(_verb: str, p: argparse.ArgumentParser) -> None:
    cluster.add_flags(p)
    p.add_argument("names", nargs="*", metavar="NAME", help="only the runtimes of these names")
    p.add_argument(
        "-o", "--output", choices=output.FORMATS, help="yaml, json or name: the runtimes as stored"
    )
    p.set_defaults(run=_runtimes)


def _runtimes(args: argparse.Namespace) -> int:
    with cluster.connect(args) as c:
        found = c.runtime_objects(namespace=args.namespace)
        namespace = args.namespace or c.namespace
    shown = [o for o in found if not args.names or _name(o) in args.names]
    missing = [n for n in args.names if not any(_name(o) == n for o in found)]
    if args.output:
        dump(shown, args.output, sys.stdout, single=len(args.names) == 1 and len(shown) == 1)
    elif shown:
        headers, table, problems = rows(shown, found, namespace)
        sys.stdout.write(output.table(headers, table))
        for problem in problems:
            print(f"warning: {problem}", file=sys.stderr)
    elif not args.names:
        print(
            f"No runtimes found: no ClusterTrainingRuntimes, and no TrainingRuntimes in namespace {namespace!r}.",
            file=sys.stderr,
        )
    if missing:
        where = f"ClusterTrainingRuntimes or TrainingRuntimes of namespace {namespace!r}"
        raise errors.CommandError("\n".join(f"no runtime {n!r} among the {where}" for n in missing))
    return 0


HEADERS = ("name", "kind", "framework", "replicas", "node type", "job gives")


def rows(
    shown: Sequence[Mapping[str, Any]],
    every: Sequence[Mapping[str, Any]] | None = None,
    namespace: str | None = None,
) -> tuple[tuple[str, ...], list[tuple[object, ...]], list[str]]:
    """The headers and rows of ``shown`` (runtimes as stored), and why a runtime's row is
    incomplete, where one is. ``every`` is what a runtime may build on (default: ``shown``);
    ``namespace``, the TrainingRuntimes'."""
    from kubetrain.operator import expansion
    from kubetrain.operator.frameworks import registry

    resolve = expansion.from_documents(every if every is not None else shown)
    frameworks = registry.default()
    table: list[tuple[object, ...]] = []
    problems: list[str] = []
    for obj in shown:
        kind, name = str(obj.get("kind")), _name(obj)
        own = obj.get("spec") or {}
        cells: list[object] = [name, kind, (own.get("framework") or {}).get("name") or "?", "?", "?", "?"]
        table.append(tuple(cells))
        try:
            ref = v1beta1.RuntimeRef(kind=Kind(kind), name=name)
            ns = (obj.get("metadata") or {}).get("namespace") or namespace
            runtime = expansion.resolve_runtime(ref, ns if ref.kind is Kind.NAMESPACED else None, resolve)
            spec = runtime.spec
            framework = (spec.get("framework") or {}).get("name")
            cells[2:4] = [framework or "?", _replicas(spec)]
            fw = frameworks.get(str(framework))
            at = (runtime.label, ("spec", "trainer"))
            cells[4:6] = [
                expansion.places(spec, fw, at).node,
                ", ".join(expansion.needs(runtime, frameworks)) or "-",
            ]
        except registry.UnknownFrameworkError:
            problems.append(f"{kind} {name}: framework {cells[2]} is not one this kubetrain knows")
        except (validation.ValidationError, ValueError) as e:
            problems.append(f"{kind} {name}: {_said(e)}")
        table[-1] = tuple(cells)
    return HEADERS, table, problems


def _replicas(spec: Mapping[str, Any]) -> str:
    replicas = spec.get("replicaSpecs") or {}
    return " ".join(f"{t}={(r or {}).get('replicas', 1)}" for t, r in replicas.items()) or "-"


def _said(e: Exception) -> str:
    if isinstance(e, validation.ValidationError):
        return "; ".join(f.message if f.path[:2] == ("spec", "runtimeRef") else str(f) for f in e.errors)
    return str(e)


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def dump(objects: Sequence[Mapping[str, Any]], fmt: str, out: TextIO, *, single: bool) -> None:
    """The runtimes in ``fmt`` as ``output.dump`` prints jobs: ``name``, or the objects as stored
    (without ``managedFields``), one as such or several as a ``List``."""
    if fmt == "name":
        for obj in objects:
            print(f"{str(obj.get('kind')).lower()}.{v1beta1.GROUP}/{_name(obj)}", file=out)
        return
    items = []
    for obj in objects:
        item = json.loads(json.dumps(obj))
        (item.get("metadata") or {}).pop("managedFields", None)
        items.append(item)
    data: dict[str, Any] = (
        items[0] if single and len(items) == 1 else {"apiVersion": "v1", "kind": "List", "items": items}
    )
    if fmt == "json":
        json.dump(data, out, indent=4)
        out.write("\n")
    else:
        output.yaml_documents([data], out)
