"""A private event loop in a thread of its own, so the client is synchronous everywhere.

The client's work is asynchronous inside (kr8s's async API, several log streams at once),
but the people who use it call it from scripts and notebooks. A notebook already runs an
event loop in its main thread, so ``asyncio.run`` there fails; the client therefore runs
its coroutines on a loop in a daemon thread it owns and waits for their results. A
generator of the client pulls one item at a time from an async generator on that loop;
closing the generator (a ``break``, Ctrl-C) closes the async one there, which closes its
HTTP streams.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["Loop"]

T = TypeVar("T")


class Loop:
    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kubetrain-client", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """The result of ``coro``, run on the client's loop; Ctrl-C cancels it there."""
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result()
        except (KeyboardInterrupt, GeneratorExit):
            # Let the cancellation land before anyone closes what the coroutine was using.
            future.cancel()
            concurrent.futures.wait([future], timeout=5)
            raise
        except concurrent.futures.CancelledError:
            raise KeyboardInterrupt from None

    def iterate(self, agen: AsyncIterator[T]) -> Iterator[T]:
        """The items of ``agen``, one at a time; leaving early closes it on the loop."""
        try:
            while True:
                try:
                    yield self.run(_next(agen))
                except StopAsyncIteration:
                    return
        finally:
            aclose = getattr(agen, "aclose", None)
            if aclose is not None and not self._loop.is_closed():
                asyncio.run_coroutine_threadsafe(aclose(), self._loop).result(timeout=10)

    def close(self) -> None:
        if self._loop.is_closed():
            return
        # As asyncio.run ends a loop: what is still pending is cancelled and let finish, and
        # async generators left open are closed, before the loop stops. Otherwise a task the
        # collector finds later is "destroyed but pending", a warning on the user's terminal.
        with contextlib.suppress(concurrent.futures.TimeoutError):
            asyncio.run_coroutine_threadsafe(_finish_pending(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()


async def _finish_pending() -> None:
    pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()


async def _next(agen: AsyncIterator[T]) -> T:
    return await anext(agen)
