"""A TCP proxy on 127.0.0.1 that a test can cut (a network partition) and heal."""

from __future__ import annotations

import asyncio
import contextlib


class Proxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._links: set[asyncio.StreamWriter] = set()
        self.cut = False

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        self.partition()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def partition(self) -> None:
        """Drop every open connection and refuse new ones until :meth:`heal`."""
        self.cut = True
        for writer in list(self._links):
            writer.close()
        self._links.clear()

    def heal(self) -> None:
        self.cut = False

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut:
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        self._links |= {writer, up_writer}
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError, OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()
        self._links.discard(writer)
