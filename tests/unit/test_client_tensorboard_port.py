"""The local port of ``tensorboard()`` is one that really listens, or a clear error.

Only the listening side runs here; the forward through the apiserver to the pod is tested on a
real node (``tests/node/test_user_client_tensorboard.py``).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import kr8s.asyncio.objects
import pytest

from kubetrain.client import errors, tensorboard

POD = kr8s.asyncio.objects.Pod({"metadata": {"name": "tb", "namespace": "ns"}}, api=None)


@pytest.fixture
def taken() -> Iterator[int]:
    """A port on 127.0.0.1 another process holds."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


def _accepts(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_a_free_port_taken_before_the_bind_is_replaced_by_another(
    taken: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    offered = iter([taken, taken])
    real = tensorboard._free_port
    monkeypatch.setattr(tensorboard, "_free_port", lambda: next(offered, None) or real())

    async def scenario() -> int:
        async with tensorboard.listening(POD, 0) as port:
            assert _accepts(port)
            return port

    port = asyncio.run(scenario())
    assert port != taken
    assert not _accepts(port)  # closed with the context


def test_a_port_the_user_named_that_is_taken_is_an_error_that_names_it(taken: int) -> None:
    async def scenario() -> None:
        async with tensorboard.listening(POD, taken):
            pytest.fail("listening on a port another process holds")

    with pytest.raises(errors.Error, match=f"cannot listen on 127.0.0.1:{taken} for TensorBoard"):
        asyncio.run(scenario())


def test_the_tries_end_with_an_error(taken: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tensorboard, "_free_port", lambda: taken)

    async def scenario() -> None:
        async with tensorboard.listening(POD, 0):
            pytest.fail("listening on a port another process holds")

    with pytest.raises(errors.Error, match="cannot listen on"):
        asyncio.run(scenario())
