"""Scalars for TensorBoard, written by hand: an event file needs no TensorFlow, nor protobuf.

An event file (``events.out.tfevents.*``) is a sequence of TFRecords — a length, the data and
a masked CRC-32C of each — whose data are serialized ``tensorflow.Event`` messages. A scalar
is an Event with a wall time, a step and a Summary of one ``simple_value``; the first Event of
a file says its version. The few protobuf fields that takes are encoded below.

    with tfevents.Writer("/logs/run-1") as w:
        w.scalar("loss", 0.25, step=10)

Each scalar is flushed as it is written, so TensorBoard shows a run while it trains.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from types import TracebackType

__all__ = ["Writer", "crc32c"]


def _table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1  # Castagnoli, reflected
        table.append(c)
    return table


_TABLE = _table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _bytes_field(number: int, data: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _event(wall_time: float, step: int, *, version: str | None = None, summary: bytes | None = None) -> bytes:
    out = _varint(1 << 3 | 1) + struct.pack("<d", wall_time) + _varint(2 << 3) + _varint(step)
    if version is not None:
        out += _bytes_field(3, version.encode())
    if summary is not None:
        out += _bytes_field(5, summary)
    return out


def _scalar_summary(tag: str, value: float) -> bytes:
    summary_value = _bytes_field(1, tag.encode()) + _varint(2 << 3 | 5) + struct.pack("<f", value)
    return _bytes_field(1, summary_value)


def _record(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", _masked(length)) + data + struct.pack("<I", _masked(data))


class Writer:
    """One event file in ``log_dir`` (a TensorBoard run), made if missing."""

    def __init__(self, log_dir: str) -> None:
        os.makedirs(log_dir, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{os.getpid()}"
        self.path = os.path.join(log_dir, name)
        self._file = open(self.path, "ab")  # noqa: SIM115 - closed by close()
        self._write(_event(time.time(), 0, version="brain.Event:2"))

    def scalar(self, tag: str, value: float, step: int) -> None:
        self._write(_event(time.time(), step, summary=_scalar_summary(tag, value)))

    def _write(self, data: bytes) -> None:
        self._file.write(_record(data))
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Writer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
