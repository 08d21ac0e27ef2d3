"""YAML read as plain data, within bounds, with the line and column of every field.

A file a person hands to ``kubetrain`` may be anything: UTF-16 with a byte-order mark, a
binary, a billion-laughs alias bomb, a job nested thousands deep, five megabytes, keys written
twice, ``!!python/object`` tags. :func:`read` turns bytes into the documents they hold —
JSON-shaped data (dicts with string keys, lists, strings, ints, finite floats, booleans,
``None``) — or raises :class:`ReadError` at the line and column of the first thing wrong, with the
field path that leads there. It never recurses, so no input can exhaust the stack, and it
holds to these bounds:

- at most :data:`MAX_BYTES` of input (a stored TrainingJob is at most 1.5 MiB, etcd's limit)
  and :data:`MAX_DOCUMENTS` documents;
- text in UTF-8, UTF-16 or UTF-32 (a byte-order mark, or the YAML spec's detection by zero
  bytes), with no control characters YAML forbids;
- nesting at most :data:`MAX_DEPTH` levels (a TrainingJob nests about 15);
- at most :data:`MAX_VALUES` values (maps, lists and scalars) in a file, each alias counted as
  the copy of what it names that it is (as Kubernetes reads it): a bomb is refused before it
  is expanded, and a list of millions of numbers before it costs seconds;
- a key written once per map (``kubectl`` refuses duplicates too): the error names both lines;
- only the tags of plain data; ``!!python/object``, ``!!binary``, ``!!set`` and local tags
  are refused, timestamps stay the strings they are written as, and a number must be finite
  and at most :data:`MAX_NUMBER` characters long (JSON cannot hold NaN, nor a job need more).

Events come from libyaml's parser where PyYAML was built with it (``yaml.CParser``: marks
kept), else from PyYAML's own; the data is built from them here, one event at a time.
Keys are strings as written (``on: 1`` has the key ``"on"``); ``<<`` merges maps.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from typing import Any, NamedTuple

import yaml
from yaml import events
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode

from kubetrain.api.validation import Path

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_DOCUMENTS",
    "MAX_NUMBER",
    "MAX_VALUES",
    "Pos",
    "ReadError",
    "decode",
    "parse",
    "read",
]

MAX_BYTES = 8 * 1024 * 1024
MAX_DOCUMENTS = 100
MAX_DEPTH = 100
MAX_VALUES = 200_000
MAX_NUMBER = 100


def _libyaml() -> Any:
    """libyaml's parser where PyYAML was built with it: events in C, with the same marks."""
    try:
        from yaml import _yaml
    except ImportError:  # pragma: no cover - PyYAML without libyaml
        return None
    return _yaml.CParser


_CParser = _libyaml()

#: Whether libyaml parses (else PyYAML's own parser, some ten times slower).
LIBYAML = _CParser is not None


class Pos(NamedTuple):
    """Where a value is written (1-based); a map's entries are at their keys."""

    line: int
    column: int
    children: dict[str, Pos] | list[Pos] | None = None


class ReadError(ValueError):
    """The first thing wrong with the input, where it is (1-based) and the path leading there."""

    def __init__(self, line: int, column: int, path: Path, message: str) -> None:
        super().__init__(message)
        self.line, self.column, self.path, self.message = line, column, path, message


def read(data: bytes) -> list[tuple[Any, Pos]]:
    """Every non-empty document of ``data``, with its positions; :class:`ReadError` if none."""
    if len(data) > MAX_BYTES:
        raise ReadError(1, 1, (), f"larger than {_size(MAX_BYTES)}, more than kubetrain reads in one file")
    return parse(decode(data))


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n:,} bytes"


# --- bytes to text ----------------------------------------------------------------------------

_BOMS = (
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
)
_NAMES = {
    "utf-8": "UTF-8",
    "utf-16-be": "UTF-16",
    "utf-16-le": "UTF-16",
    "utf-32-be": "UTF-32",
    "utf-32-le": "UTF-32",
}
# What YAML 1.1 and 1.2 allow in a stream (c-printable); anything else must be an escape.
_UNPRINTABLE = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _encoding(data: bytes) -> tuple[str, int]:
    """The encoding and the length of its byte-order mark (YAML 1.2, 5.2)."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name, len(bom)
    head = data[:4]
    if len(head) == 4 and head[:3] == b"\0\0\0":
        return "utf-32-be", 0
    if len(head) == 4 and head[1:] == b"\0\0\0":
        return "utf-32-le", 0
    if len(head) >= 2 and head[0] == 0:
        return "utf-16-be", 0
    if len(head) >= 2 and head[1] == 0:
        return "utf-16-le", 0
    return "utf-8", 0


def decode(data: bytes) -> str:
    """``data`` as text, or :class:`ReadError` at the first byte that is not, or a forbidden character."""
    encoding, skip = _encoding(data)
    body = data[skip:]
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as e:
        before = body[: e.start].decode(encoding, errors="replace")
        line, column = _line_column(before, len(before))
        found = " ".join(f"0x{b:02x}" for b in body[e.start : min(e.end, e.start + 4)])
        raise ReadError(
            line,
            column,
            (),
            f"not {_NAMES[encoding]} text ({found}: {e.reason}); YAML is UTF-8, UTF-16 or UTF-32 text",
        ) from None
    bad = _UNPRINTABLE.search(text)
    if bad is not None:
        line, column = _line_column(text, bad.start())
        raise ReadError(
            line,
            column,
            (),
            f"the control character U+{ord(bad.group()):04X} is not allowed in YAML "
            '(in a double-quoted string, write it as an escape such as "\\x00")',
        )
    return text


def _line_column(text: str, index: int) -> tuple[int, int]:
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


# --- text to data -----------------------------------------------------------------------------

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (_TAG + t for t in ("str", "int", "float", "bool", "null"))
_MERGE_TAG, _TIMESTAMP, _VALUE = _TAG + "merge", _TAG + "timestamp", _TAG + "value"
_MAP_TAGS = frozenset((None, "!", _TAG + "map"))
_SEQ_TAGS = frozenset((None, "!", _TAG + "seq"))
_TEXT_TAGS = frozenset((_STR, _TIMESTAMP, _VALUE, _MERGE_TAG))
_MERGE = object()  # the pending key of a map whose next value is a ``<<`` merge
_RESOLVER = yaml.resolver.Resolver()
_CONSTRUCTOR = SafeConstructor()


class _Frame:
    """A map or list being built."""

    __slots__ = (
        "anchor",
        "children",
        "column",
        "depth",
        "key",
        "key_at",
        "line",
        "merges",
        "part",
        "size",
        "value",
    )

    def __init__(
        self, value: Any, children: Any, part: str | int | None, anchor: str | None, mark: Any
    ) -> None:
        self.value, self.children, self.part, self.anchor = value, children, part, anchor
        self.line, self.column = mark.line + 1, mark.column + 1
        self.key: Any = None  # a map's key awaiting its value (or _MERGE)
        self.key_at = (0, 0)
        self.merges: list[tuple[dict[str, Any], dict[str, Pos]]] = []
        self.size = 1  # values in it, itself included: what an alias of it adds
        self.depth = 1  # levels of maps and lists, itself included


class _Builder:
    def __init__(self) -> None:
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Any, Pos, int, int]] = {}
        self.values = 0  # in the file so far, aliases expanded
        self.root: tuple[Any, Pos] | None = None
        self.shared = False  # an alias put a value in twice: copied apart once the document is read

    # -- where we are, for a message --

    def path(self, *, item: bool = True) -> Path:
        """Where the next value goes; ``item``: with the index of a list's next item."""
        out: list[str | int] = [f.part for f in self.stack[1:] if f.part is not None]
        if self.stack:
            top = self.stack[-1]
            if isinstance(top.value, list):
                if not item:
                    return tuple(out)
                out.append(len(top.value))
            elif isinstance(top.key, str):
                out.append(top.key)
            elif top.key is _MERGE:
                out.append("<<")
        return tuple(out)

    def problem(self, mark: Any, message: str) -> ReadError:
        return ReadError(mark.line + 1, mark.column + 1, self.path(), message)

    # -- events --

    def start(self, event: Any, value: dict[str, Any] | list[Any], children: Any) -> None:
        if len(self.stack) >= MAX_DEPTH:
            raise self.problem(
                event.start_mark, f"nests deeper than {MAX_DEPTH} levels, more than kubetrain reads"
            )
        self._key_must_be_text(event, "a map" if isinstance(value, dict) else "a list")
        self.count(event, 1)
        part = self._part()
        self.stack.append(_Frame(value, children, part, event.anchor, event.start_mark))

    def end(self) -> None:
        frame = self.stack.pop()
        if frame.merges:
            assert isinstance(frame.value, dict)
            assert isinstance(frame.children, dict)
            for merged, at in frame.merges:
                for k, v in merged.items():
                    if k not in frame.value:
                        frame.value[k] = v
                        frame.children[k] = at[k]
        pos = Pos(frame.line, frame.column, frame.children)
        if frame.anchor is not None:
            self.anchors[frame.anchor] = (frame.value, pos, frame.size, frame.depth)
        self.add(frame.value, pos, frame.size, frame.depth)

    def scalar(self, event: Any) -> None:
        top = self.stack[-1] if self.stack else None
        if top is not None and isinstance(top.value, dict) and top.key is None:
            self._key(top, event)
            return
        self.count(event, 1)
        value = self._value(event)
        pos = Pos(event.start_mark.line + 1, event.start_mark.column + 1)
        if event.anchor is not None:
            self.anchors[event.anchor] = (value, pos, 1, 0)
        self.add(value, pos, 1, 0)

    def alias(self, event: Any) -> None:
        self._key_must_be_text(event, f"an alias (*{event.anchor})")
        found = self.anchors.get(event.anchor)
        if found is None:
            raise self.problem(
                event.start_mark, f"*{event.anchor} names no anchor (&{event.anchor}) before it"
            )
        value, pos, size, depth = found
        self.count(event, size)
        if len(self.stack) + depth > MAX_DEPTH:
            raise self.problem(
                event.start_mark, f"nests deeper than {MAX_DEPTH} levels, more than kubetrain reads"
            )
        if isinstance(value, dict | list):
            self.shared = True
        self.add(
            value, Pos(event.start_mark.line + 1, event.start_mark.column + 1, pos.children), size, depth
        )

    def count(self, event: Any, n: int) -> None:
        self.values += n
        if self.values > MAX_VALUES:
            alias = (
                f" (aliases expanded: *{event.anchor} is {n:,})" if type(event) is events.AliasEvent else ""
            )
            raise self.problem(
                event.start_mark, f"holds more than {MAX_VALUES:,} values{alias}, more than kubetrain reads"
            )

    def add(self, value: Any, pos: Pos, size: int, depth: int) -> None:
        if not self.stack:
            self.root = (value, pos)
            return
        top = self.stack[-1]
        top.size += size
        top.depth = max(top.depth, depth + 1)
        if isinstance(top.value, list):
            top.value.append(value)
            assert isinstance(top.children, list)
            top.children.append(pos)
            return
        assert isinstance(top.children, dict)
        if top.key is _MERGE:
            self._merge(top, value, pos)
        else:
            top.value[top.key] = value
            top.children[top.key] = Pos(*top.key_at, pos.children)
        top.key = None

    # -- pieces --

    def _part(self) -> str | int | None:
        if not self.stack:
            return None
        top = self.stack[-1]
        if isinstance(top.value, list):
            return len(top.value)
        return top.key if isinstance(top.key, str) else "<<"

    def _key_must_be_text(self, event: Any, what: str) -> None:
        top = self.stack[-1] if self.stack else None
        if top is not None and isinstance(top.value, dict) and top.key is None:
            raise self.problem(event.start_mark, f"a key must be a string, not {what}")

    def _key(self, top: _Frame, event: Any) -> None:
        tag = event.tag
        if tag is None or tag == "!":
            tag = _resolve(event.value, event.implicit[0])
        elif tag not in (_STR, _INT, _FLOAT, _BOOL, _NULL, _TIMESTAMP, _VALUE):
            raise self.problem(event.start_mark, _tag_message(tag))
        mark = event.start_mark
        self.count(event, 1)
        if tag == _MERGE_TAG:
            top.key = _MERGE
            top.key_at = (mark.line + 1, mark.column + 1)
            return
        key: str = event.value
        if key in top.value:
            first = top.children[key]
            top.key = key  # the path names it
            raise self.problem(
                mark,
                f"duplicate key {key!r}: written at line {first.line} and again at line {mark.line + 1}; keep one",
            )
        if event.anchor is not None:
            self.anchors[event.anchor] = (key, Pos(mark.line + 1, mark.column + 1), 1, 0)
        top.key = key
        top.key_at = (mark.line + 1, mark.column + 1)

    def _merge(self, top: _Frame, value: Any, pos: Pos) -> None:
        if isinstance(value, dict):
            assert isinstance(pos.children, dict)
            top.merges.append((value, pos.children))
            return
        if isinstance(value, list) and all(isinstance(v, dict) for v in value):
            assert isinstance(pos.children, list)
            for item, at in zip(value, pos.children, strict=True):
                assert isinstance(at.children, dict)
                top.merges.append((item, at.children))
            return
        raise ReadError(
            pos.line, pos.column, self.path(), "<< merges a map, or a list of maps, into this one"
        )

    def _value(self, event: Any) -> Any:
        value: str = event.value
        tag = event.tag
        if tag is None or tag == "!":
            tag = _resolve(value, event.implicit[0])
        if tag in _TEXT_TAGS:
            return value
        if tag == _NULL:
            return None
        if tag == _BOOL:
            found = SafeConstructor.bool_values.get(value.lower())
            if found is None:
                raise self.problem(event.start_mark, f"!!bool {value!r} is not true or false")
            return found
        if tag in (_INT, _FLOAT):
            return self._number(event, tag, value)
        raise self.problem(event.start_mark, _tag_message(tag))

    def _number(self, event: Any, tag: str, value: str) -> int | float:
        if len(value) > MAX_NUMBER:
            raise self.problem(
                event.start_mark,
                f"a number {len(value):,} characters long; kubetrain reads numbers of at most {MAX_NUMBER} "
                "(quote it if it is text)",
            )
        if tag == _INT and value.isascii() and value.isdigit() and (value[0] != "0" or value == "0"):
            return int(value)  # the common case: decimal, and not YAML 1.1's octal 010
        node = ScalarNode(tag, value)
        try:
            number: int | float = (
                _CONSTRUCTOR.construct_yaml_int(node)
                if tag == _INT
                else _CONSTRUCTOR.construct_yaml_float(node)
            )
        except (ValueError, IndexError):
            kind = "an integer" if tag == _INT else "a number"
            raise self.problem(event.start_mark, f"{value!r} is not {kind}") from None
        if isinstance(number, float) and not math.isfinite(number):
            raise self.problem(
                event.start_mark, f"{value} is not a finite number; JSON, and so the cluster, cannot hold it"
            )
        return number


_RESOLVED: dict[str, str] = {}


def _resolve(value: str, plain: bool) -> str:
    """The tag of an untagged scalar: a plain one's by YAML 1.1's rules (as ``kubectl``'s), else str."""
    if not plain:
        return _STR
    tag = _RESOLVED.get(value)
    if tag is None:
        tag = str(_RESOLVER.resolve(ScalarNode, value, (True, False)))  # type: ignore[no-untyped-call]
        if len(value) < 64 and len(_RESOLVED) < 4096:
            _RESOLVED[value] = tag
    return tag


def _tag_message(tag: str) -> str:
    shown = "!!" + tag.removeprefix(_TAG) if tag.startswith(_TAG) else tag
    return f"the tag {shown} is not allowed: kubetrain reads plain data (maps, lists, strings, numbers, true/false, null)"


class _PyParser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    """PyYAML's own event parser, where it was built without libyaml."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)


def _parser(text: str) -> Any:
    return _CParser(text) if _CParser is not None else _PyParser(text)


def parse(text: str, parser: Any = None) -> list[tuple[Any, Pos]]:
    """Every non-empty document of ``text`` with its positions; :class:`ReadError` if there is none,
    or at the first thing wrong."""
    p = parser if parser is not None else _parser(text)
    found: list[tuple[Any, Pos]] = []
    b = _Builder()
    try:
        while True:
            event = p.get_event()
            kind = type(event)
            if kind is events.ScalarEvent:
                b.scalar(event)
            elif kind is events.MappingStartEvent:
                if event.tag not in _MAP_TAGS:
                    raise b.problem(event.start_mark, _tag_message(event.tag))
                b.start(event, {}, {})
            elif kind is events.SequenceStartEvent:
                if event.tag not in _SEQ_TAGS:
                    raise b.problem(event.start_mark, _tag_message(event.tag))
                b.start(event, [], [])
            elif kind is events.MappingEndEvent or kind is events.SequenceEndEvent:
                b.end()
            elif kind is events.AliasEvent:
                b.alias(event)
            elif kind is events.DocumentEndEvent:
                if b.root is not None and b.shared:
                    # Each alias a copy of its own, as Kubernetes reads one: only now that the
                    # document is read within bounds, so a bomb is refused before any copying.
                    b.root = (json.loads(json.dumps(b.root[0])), b.root[1])
                if b.root is not None and b.root[0] is not None:
                    if len(found) == MAX_DOCUMENTS:  # told where the one too many begins
                        at = b.root[1]
                        raise ReadError(
                            at.line,
                            at.column,
                            (),
                            f"more than {MAX_DOCUMENTS} documents in one file; split it",
                        )
                    found.append(b.root)
                values = b.values
                b = _Builder()
                b.values = values  # the bound is the file's
            elif kind is events.StreamEndEvent:
                break
    except yaml.MarkedYAMLError as e:
        raise _syntax(e, text, b.path(item=False)) from None
    except yaml.YAMLError as e:  # a reader's error: no mark, only a position
        raise ReadError(*_line_column(text, getattr(e, "position", 0)), b.path(), str(e)) from None
    finally:
        dispose = getattr(p, "dispose", None)
        if dispose is not None:
            dispose()
    if not found:
        raise ReadError(1, 1, (), "no document in it: it is empty, or only comments")
    return found


def _syntax(e: yaml.MarkedYAMLError, text: str, path: Path) -> ReadError:
    """A parser's error at the problem's line; at the end of the text, where the unfinished began."""
    problem, context = e.problem or "", e.context or ""
    mark = e.problem_mark or e.context_mark
    end = len(text.rstrip())
    if mark is not None and mark.index >= end and e.context_mark is not None:
        mark = e.context_mark
        message = f"{context}: {problem}" if context else problem
    else:
        ctx = e.context_mark
        message = problem or context
        if context and problem and ctx is not None:
            message = f"{problem} ({context} at line {ctx.line + 1}, column {ctx.column + 1})"
    if mark is None:
        return ReadError(1, 1, path, message)
    line, column = mark.line + 1, mark.column + 1
    if mark.index >= end:  # still past the last line written: point at the end of it
        line, column = _line_column(text, end)
    return ReadError(line, column, path, message)
