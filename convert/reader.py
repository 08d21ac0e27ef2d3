"""Reading an old document field by field, so that nothing is dropped unnoticed.

The first operators were documented in several spellings of the same field: their Go
types' JSON names (``replicaSpecs``, ``tfReplicaType``), their proto and README forms
(``replica_specs``, ``tf_replica_type``) and upper case (``REPLICA_SPECS``). A
:class:`Reader` wraps one mapping of the input and matches a key by its letters and
digits alone, ignoring case and underscores. Every key a converter reads, or explicitly
:meth:`Reader.drop`\\ s with a note, is marked; :meth:`Reader.finish` reports every other
key as ``unknown field`` with its path. All readers of one document share a
:class:`Findings`, which collects errors and notes instead of stopping at the first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from kubetrain.api import validation
from kubetrain.convert import notes

__all__ = ["Findings", "Reader", "spelling"]


def spelling(key: str) -> str:
    """The key as compared: ``tf_replica_type``, ``tfReplicaType`` and ``TF_REPLICA_TYPE`` agree."""
    return re.sub(r"[^0-9a-z]", "", key.lower())


@attrs.define
class Findings:
    """Errors and notes of one document's conversion, in the order they were found."""

    errors: list[validation.FieldError] = attrs.field(factory=list)
    notes: list[notes.Note] = attrs.field(factory=list)

    def error(self, path: validation.Path, message: str) -> None:
        self.errors.append(validation.FieldError(path=path, message=message))

    def note(self, path: validation.Path, message: str) -> None:
        self.notes.append(notes.Note(path=path, message=message))

    def check(self) -> None:
        """Raise every error found so far, if any."""
        if self.errors:
            raise validation.ValidationError(self.errors)


class Reader:
    """One mapping of the input; remembers which of its keys were read."""

    def __init__(self, data: Any, path: validation.Path, findings: Findings) -> None:
        self.path = path
        self.findings = findings
        if not isinstance(data, Mapping):
            findings.error(path, f"expected an object, got {type(data).__name__}")
            data = {}
        self.data: Mapping[str, Any] = data
        self._read: set[str] = set()

    def _key(self, *names: str) -> str | None:
        wanted = {spelling(n) for n in names}
        found = [k for k in self.data if isinstance(k, str) and spelling(k) in wanted]
        if len(found) > 1:
            self.findings.error(self.path, f"{' and '.join(found)} are the same field; keep one")
        return found[0] if found else None

    def has(self, *names: str) -> bool:
        return self._key(*names) is not None

    def take(self, *names: str, default: Any = None) -> Any:
        """The value under the first spelling of ``names`` present, else ``default``."""
        key = self._key(*names)
        if key is None:
            return default
        self._read.add(key)
        return self.data[key]

    def where(self, *names: str) -> validation.Path:
        """The path of the field ``names`` as the document spells it (or the first name)."""
        return (*self.path, self._key(*names) or names[0])

    def child(self, *names: str) -> Reader | None:
        """A reader of the object under ``names``; ``None`` if absent or null."""
        key = self._key(*names)
        if key is None:
            return None
        self._read.add(key)
        if self.data[key] is None:
            return None
        return Reader(self.data[key], (*self.path, key), self.findings)

    def items(self, *names: str) -> list[Reader]:
        """Readers of every object of the list under ``names`` (absent: none)."""
        key = self._key(*names)
        if key is None:
            return []
        self._read.add(key)
        value = self.data[key]
        if value is None:
            return []
        if not isinstance(value, Sequence) or isinstance(value, str):
            self.findings.error((*self.path, key), f"expected a list, got {type(value).__name__}")
            return []
        return [Reader(v, (*self.path, key, i), self.findings) for i, v in enumerate(value)]

    def entries(self, *names: str) -> list[tuple[str, Reader]]:
        """``(key, reader)`` for every object of the map under ``names`` (absent: none)."""
        child = self.child(*names)
        if child is None:
            return []
        out = [(str(k), Reader(v, (*child.path, str(k)), self.findings)) for k, v in child.data.items()]
        child._read.update(child.data)
        return out

    def drop(self, message: str, *names: str) -> None:
        """Read the field ``names`` only to note that it is not carried over."""
        key = self._key(*names)
        if key is not None:
            self._read.add(key)
            self.findings.note((*self.path, key), message)

    def rest(self) -> dict[str, Any]:
        """Every key not read yet, marking them read (for fields passed through whole)."""
        out = {k: v for k, v in self.data.items() if k not in self._read}
        self._read.update(out)
        return out

    def finish(self) -> None:
        """Every key nobody read is an unknown field."""
        for key in self.data:
            if key not in self._read:
                self.findings.error((*self.path, str(key)), "unknown field")

    # --- typed values: the old kinds were Go types, so "" and absent both mean "not set" ----

    def integer(
        self, *names: str, minimum: int, maximum: int | None = None, default: int | None = None
    ) -> int | None:
        """An integer within the bounds; ``default`` when absent or wrong (wrong is an error)."""
        value = self.take(*names)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(f"expected an integer, got {value!r}", *names)
            return default
        if value < minimum or (maximum is not None and value > maximum):
            bounds = f"at least {minimum}" if maximum is None else f"between {minimum} and {maximum}"
            self.error(f"must be {bounds}, got {value}", *names)
            return default
        return value

    def text(
        self,
        *names: str,
        default: str | None = None,
        choices: Sequence[str] = (),
        ignore_case: bool = False,
    ) -> str | None:
        """A string (one of ``choices``, as they spell it, if given); ``default`` when absent or
        ``""``; ``None`` and an error when it is not one of them."""
        value = self.take(*names)
        if value is None or value == "":
            return default
        if not isinstance(value, str):
            self.error(f"expected a string, got {value!r}", *names)
            return default
        if not choices:
            return value
        found = next((c for c in choices if c == value or (ignore_case and c.lower() == value.lower())), None)
        if found is None:
            self.error(f"must be one of {', '.join(choices)}, got {value!r}", *names)
        return found

    def truth(self, *names: str) -> bool | None:
        value = self.take(*names)
        if value is not None and not isinstance(value, bool):
            self.error(f"expected true or false, got {value!r}", *names)
            return None
        return value

    def error(self, message: str, *names: str) -> None:
        self.findings.error(self.where(*names) if names else self.path, message)

    def note(self, message: str, *names: str) -> None:
        self.findings.note(self.where(*names) if names else self.path, message)
