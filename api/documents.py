"""YAML documents read from a file, remembering where each field was written.

The one way kubetrain reads a file a person hands it — ``kubetrain render``, ``convert`` and
``submit``, the client's ``create_from_file`` and a kubeconfig: :func:`load` reads every
document of a file (``-`` is standard input) through :mod:`kubetrain.api.yamlsafe`, which
bounds what any input can cost and keeps the line and column of every field, so that
:meth:`Document.where` turns a field path of a validation error into ``job.yaml:12:7``.
Whatever cannot be read — a file that is not there, not text, not YAML, empty, a bomb —
raises :class:`DocumentError`: one ``FILE:LINE:COLUMN: path: message`` line (the path where
there is one).
"""

from __future__ import annotations

import sys
from typing import Any, BinaryIO

import attrs

from kubetrain.api import validation, yamlsafe

__all__ = ["Document", "DocumentError", "load", "loads"]


class DocumentError(ValueError):
    """Input that cannot be read, or a document's field errors: ``FILE:LINE:COLUMN: ...`` lines."""


@attrs.frozen(kw_only=True)
class Document:
    source: str  # the file's name as given, or <stdin>
    data: Any
    pos: yamlsafe.Pos = attrs.field(repr=False)

    def where(self, path: validation.Path) -> str:
        """``file:line:column`` of the deepest part of ``path`` that the document spells out."""
        pos = self.pos
        for part in path:
            child = _child(pos, part)
            if child is None:
                break
            pos = child
        return f"{self.source}:{pos.line}:{pos.column}"

    def explain(self, e: validation.ValidationError) -> DocumentError:
        """``e`` as one ``file:line:column: path: message`` line per field."""
        return DocumentError("\n".join(f"{self.where(f.path)}: {f}" for f in e.errors))


def load(name: str) -> list[Document]:
    """Every non-empty document of file ``name`` (``-``: standard input); at least one."""
    source = "<stdin>" if name == "-" else name
    try:
        if name == "-":
            stdin = getattr(sys.stdin, "buffer", None)  # a test's StringIO has none
            data = _read(stdin) if stdin is not None else sys.stdin.read(yamlsafe.MAX_BYTES + 1).encode()
        else:
            with open(name, "rb") as f:
                data = _read(f)
    except OSError as e:
        raise DocumentError(f"{source}: {e.strerror or e}") from None
    return loads(data, source)


def loads(data: bytes | str, source: str) -> list[Document]:
    """Every non-empty document of ``data``, read as :func:`load` reads a file named ``source``."""
    try:
        found = yamlsafe.read(data.encode() if isinstance(data, str) else data)
    except yamlsafe.ReadError as e:
        raise DocumentError(f"{source}:{e.line}:{e.column}: {_path(e.path)}{e.message}") from None
    return [Document(source=source, data=d, pos=p) for d, p in found]


def _child(pos: yamlsafe.Pos, part: str | int) -> yamlsafe.Pos | None:
    children = pos.children
    found: yamlsafe.Pos | None = None
    if isinstance(children, dict) and isinstance(part, str):
        found = children.get(part)
    elif isinstance(children, list) and isinstance(part, int) and 0 <= part < len(children):
        found = children[part]
    return found


def _path(path: validation.Path, shown: int = 6) -> str:
    """``path: ``, shortened when it is deeper than anyone reads (a nesting bomb's)."""
    if not path:
        return ""
    if len(path) <= shown:
        return f"{validation.format_path(path)}: "
    return f"{validation.format_path(path[:shown])}... ({len(path)} levels): "


def _read(f: BinaryIO) -> bytes:
    """The whole stream, or one byte more than kubetrain reads (so that a bigger one is refused
    without reading it all: /dev/zero ends too)."""
    return f.read(yamlsafe.MAX_BYTES + 1)
