"""How the command prints: tables like kubectl's, ages, objects as YAML or JSON, and colour.

Tables are left-aligned columns under upper-case headers, three spaces apart, as kubectl
prints them; an age is kubectl's too (``45s``, ``3m12s``, ``5h``, ``12d``), so the two
tools read alike side by side. ``-o yaml|json`` prints the v1beta1 object as the cluster
stores it, without ``managedFields`` (noise for a person, as in kubectl); several objects
are one ``List``; YAML is written by libyaml's emitter where PyYAML has it (:class:`Dumper`: a
big job in a blink, multi-line strings as literal blocks). Colour is used only on a terminal and never when ``NO_COLOR`` is set
(https://no-color.org): a pipe or a file gets plain text.
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import yaml

from kubetrain.api import scheme, v1beta1

try:  # libyaml's emitter: some ten times faster than PyYAML's own
    from yaml import CSafeDumper as _Emitter
except ImportError:  # pragma: no cover - PyYAML without libyaml
    from yaml import SafeDumper as _Emitter  # type: ignore[assignment]

__all__ = [
    "FORMATS",
    "RESOURCE",
    "Dumper",
    "Palette",
    "age",
    "dump",
    "encode",
    "palette",
    "resource",
    "table",
    "timestamp",
    "yaml_documents",
]

FORMATS = ("yaml", "json", "name")
RESOURCE = f"trainingjob.{v1beta1.GROUP}"


def resource(job: v1beta1.TrainingJob) -> str:
    """The job as kubectl names it in a message: ``trainingjob.training.kubetrain.dev/NAME``."""
    return f"{RESOURCE}/{job.metadata.name}"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], indent: str = "") -> str:
    """Columns padded to their widest cell; the last column is never padded."""
    cells = [[h.upper() for h in headers], *[["" if c is None else str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        padded = [c.ljust(w) for c, w in zip(row[:-1], widths, strict=False)]
        lines.append((indent + "   ".join([*padded, row[-1]])).rstrip())
    return "\n".join(lines) + "\n"


def age(since: datetime.datetime | None, now: datetime.datetime) -> str:
    """How long ago, as kubectl prints it (k8s.io/apimachinery's HumanDuration)."""
    if since is None:
        return "<unknown>"
    seconds = int((now - since).total_seconds())
    if seconds < -1:
        return "<invalid>"
    seconds = max(seconds, 0)
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    if days < 365 * 8:
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{days // 365}y"


def timestamp(value: datetime.datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%dT%H:%M:%SZ")


def encode(job: v1beta1.TrainingJob) -> dict[str, Any]:
    """The job as plain JSON data (enums as their strings), without ``managedFields``."""
    data: dict[str, Any] = json.loads(json.dumps(scheme.encode(job)))
    data.get("metadata", {}).pop("managedFields", None)
    return data


def dump(jobs: Sequence[v1beta1.TrainingJob], fmt: str, out: TextIO, *, single: bool) -> None:
    """The jobs in ``fmt``; ``single``: one object as such, else a kubectl-style ``List``."""
    if fmt == "name":
        for job in jobs:
            print(resource(job), file=out)
        return
    objects = [encode(j) for j in jobs]
    data: dict[str, Any] = (
        objects[0] if single and len(objects) == 1 else {"apiVersion": "v1", "kind": "List", "items": objects}
    )
    if fmt == "json":
        json.dump(data, out, indent=4)
        out.write("\n")
    else:
        yaml_documents([data], out)


class Dumper(_Emitter):
    """Plain data as YAML; multi-line strings (a shell script in a command) as literal blocks, as
    people write them."""

    def represent_str(self, data: str) -> yaml.ScalarNode:
        if "\n" in data:
            return self.represent_scalar("tag:yaml.org,2002:str", data, style="|")
        return super().represent_str(data)


Dumper.add_representer(str, Dumper.represent_str)


def yaml_documents(documents: Sequence[Any], out: TextIO) -> None:
    """``documents`` as YAML, ``---`` between them, keys in their order."""
    yaml.dump_all(documents, out, Dumper=Dumper, sort_keys=False, width=120)


class Palette:
    """ANSI styles, or nothing at all when the stream is not a terminal."""

    # Bright, distinct foregrounds that read on dark and light terminals; red is kept for errors.
    _CYCLE = ("36", "33", "35", "32", "34", "96", "93", "95", "92", "94")

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled else text

    def nth(self, n: int, text: str) -> str:
        """``text`` in the ``n``-th colour of the cycle (one per replica)."""
        return self._wrap(self._CYCLE[n % len(self._CYCLE)], text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)


def palette(stream: TextIO, environ: Mapping[str, str] | None = None) -> Palette:
    """Colours for ``stream``: only on a terminal, and never with ``NO_COLOR`` set and non-empty."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    isatty = getattr(stream, "isatty", None)
    return Palette(bool(isatty and isatty()) and not env.get("NO_COLOR"))
