"""Hostile files made at the level of bytes: encodings, broken bytes, binaries, control characters.

Each maker takes ``(rng, base)`` — a sample's name, its text as written and its data — and
returns a :class:`~kubetrain_bench.files.kinds.Made`: the bytes, what every door must make of
them, a label and the line an error must be at.
"""

from __future__ import annotations

import random

from kubetrain_bench.files.kinds import ANY, ERROR, OK, Base, Made

# The encodings YAML allows, with and without a byte-order mark.
ENCODINGS = ("utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be")
# Bytes that are not UTF-8 where they stand: a lone continuation, a Latin-1 é, an overlong
# encoding, a surrogate, a truncated sequence, bytes never used.
BAD_UTF8 = (
    b"\xff",
    b"\xe9",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xe2\x82",
    b"\x80",
    b"\xfe\xfe",
    b"\xf8\x88\x80\x80\x80",
)
# Characters YAML forbids unescaped (outside c-printable).
CONTROL = ("\x00", "\x01", "\x07", "\x08", "\x0b", "\x0c", "\x1b", "\x7f", "\x80", "\x9f", "\ufffe", "\uffff")
MAGIC = (
    b"\x7fELF\x02\x01\x01",
    b"\x1f\x8b\x08",
    b"\x89PNG\r\n\x1a\n",
    b"PK\x03\x04",
    b"%PDF-1.7\n",
    b"\0\0\0\0",
)
EMPTY = (
    b"",
    b"\n",
    b"\n\n\n",
    b"   \n\t\n",
    b"# only a comment\n",
    b"# one\n# two\n\n# three",
    b"---\n",
    b"---\n...\n",
    b"--- # nothing\n",
    b"~\n",
    b"null\n",
    b"--- null\n--- ~\n",
    b"\xef\xbb\xbf",
    b"\xff\xfe",
    b"\xfe\xff\x00\n",
    b"%YAML 1.1\n---\n",
)


def encoded(rng: random.Random, base: Base) -> Made:
    """A sample in another encoding YAML allows, or with CRLF line ends: read as the sample."""
    if rng.random() < 0.2:
        return Made(base.text.replace("\n", "\r\n").encode(), OK, "CRLF")
    encoding = rng.choice(ENCODINGS)
    return Made(base.text.encode(encoding), OK, encoding)


def bad_bytes(rng: random.Random, base: Base) -> Made:
    """Bytes that are not UTF-8 on one line: an error naming that line."""
    lines = base.text.split("\n")
    n = rng.randrange(len(lines) - 1) if len(lines) > 1 else 0
    line = lines[n].encode()
    at = rng.randint(0, len(line))
    junk = rng.choice(BAD_UTF8)
    lines_bytes = [ln.encode() for ln in lines]
    lines_bytes[n] = line[:at] + junk + line[at:]
    return Made(b"\n".join(lines_bytes), ERROR, f"{junk!r} on line {n + 1}", line=n + 1)


def latin1(rng: random.Random, base: Base) -> Made:
    """The sample with an accented comment, the whole file written as Latin-1: an error at it."""
    lines = base.text.split("\n")
    n = rng.randrange(len(lines))
    lines.insert(n, rng.choice(("# café", "# naïve résumé", "# Größe: ½")))
    return Made(
        "\n".join(lines).encode("latin-1", errors="replace"),
        ERROR,
        f"latin-1 comment on line {n + 1}",
        line=n + 1,
    )


def control(rng: random.Random, base: Base) -> Made:
    """A control character YAML forbids, raw, on one line: an error naming it."""
    lines = base.text.split("\n")
    n = rng.randrange(len(lines) - 1) if len(lines) > 1 else 0
    at = rng.randint(0, len(lines[n]))
    char = rng.choice(CONTROL)
    lines[n] = lines[n][:at] + char + lines[n][at:]
    return Made("\n".join(lines).encode(), ERROR, f"U+{ord(char):04X} on line {n + 1}", line=n + 1)


def binary(rng: random.Random, _base: Base) -> Made:
    """Random bytes, perhaps behind a known file's magic number."""
    size = rng.choice((1, 7, 64, 1024, 65536))
    data = rng.randbytes(size)
    if rng.random() < 0.5:
        data = rng.choice(MAGIC) + data
    # A random byte string can be text by chance (one byte of 0x20-0x7e is a YAML scalar): any.
    return Made(data, ANY, f"{len(data)} random bytes")


def truncated(rng: random.Random, base: Base) -> Made:
    """The sample cut at a random byte, perhaps inside a character."""
    data = base.text.encode(rng.choice(("utf-8", "utf-16")))
    cut = rng.randrange(1, len(data))
    return Made(data[:cut], ANY, f"cut at byte {cut} of {len(data)}")


def empty(rng: random.Random, _base: Base) -> Made:
    """Nothing, only blank lines, comments, markers or a null: no job in it, an error everywhere."""
    data = rng.choice(EMPTY)
    return Made(data, ERROR, f"empty {data!r}")
