"""YAML documents read from a file, remembering where each field was written.

A person who runs ``kubetrain render job.yaml`` should be pointed at a line, not only at
a field: :func:`load` parses every document of a file (``-`` is standard input) and keeps
the parser's node tree beside the data, so :meth:`Document.where` turns a field path of a
validation error into ``job.yaml:12``. A file that is not YAML raises
:class:`DocumentError` with the file, the line and the column the parser stopped at.
"""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Iterator
from typing import Any

import attrs
import yaml

from kubetrain.api import validation

__all__ = ["Document", "DocumentError", "load"]


class DocumentError(ValueError):
    """A file that cannot be read as YAML; the message starts with ``file:line:column``."""


@attrs.frozen(kw_only=True)
class Document:
    source: str  # the file's name as given, or <stdin>
    data: Any
    node: yaml.Node = attrs.field(repr=False)

    def where(self, path: validation.Path) -> str:
        """``file:line`` of the deepest part of ``path`` that the document spells out."""
        node = self.node
        for part in path:
            child = _child(node, part)
            if child is None:
                break
            node = child
        return f"{self.source}:{node.start_mark.line + 1}"

    def explain(self, e: validation.ValidationError) -> DocumentError:
        """``e`` as one ``file:line: path: message`` line per field."""
        return DocumentError("\n".join(f"{self.where(f.path)}: {f}" for f in e.errors))


def load(name: str) -> list[Document]:
    """Every non-empty document of file ``name`` (``-``: standard input)."""
    source = "<stdin>" if name == "-" else name
    try:
        text = sys.stdin.read() if name == "-" else pathlib.Path(name).read_text()
    except OSError as e:
        raise DocumentError(f"{source}: {e.strerror or e}") from None
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
        data = list(yaml.safe_load_all(text))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
        raise DocumentError(f"{where}: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise DocumentError(f"{source}: {e}") from None
    return [
        Document(source=source, data=d, node=n) for d, n in zip(data, nodes, strict=True) if d is not None
    ]


def _child(node: yaml.Node, part: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        return next((v for k, v in _pairs(node) if k.value == part), None)
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        child: yaml.Node = node.value[part]
        return child
    return None


def _pairs(node: yaml.MappingNode) -> Iterator[tuple[yaml.Node, yaml.Node]]:
    yield from node.value
