"""The HTTP under :class:`~.client.Client`: one aiohttp session, configured by kr8s.

kr8s reads the kubeconfig (or the in-cluster service account) and knows how to
authenticate: the server's address, a TLS context with the cluster's CA and any client
certificate, a bearer token, an SNI name, a proxy, and how to get a fresh token. Its own
HTTP session is httpx, which measured here costs ten times the CPU per request of aiohttp
(3.4 ms against 0.33 ms for a small GET): at thousands of writes a minute that was most
of the operator's CPU, on the cores the apiserver needs. So kr8s configures, and aiohttp
sends — one keep-alive pool of :data:`POOL` connections, each request with a deadline.

A 401 means the credentials went stale (a rotated token): kr8s authenticates again, the
session is rebuilt and the request sent again, three times at most, as kr8s itself does.
A connection that breaks under a request is most often one the apiserver closed while it
sat in the pool (it restarted, or dropped idle connections): the pool is let go and the
request sent once more on a fresh connection. Sending again is safe for what the operator
sends: creates of fixed names (409 if the first one landed), patches and deletes guarded by
a resourceVersion or UID. A second failure raises :class:`TransportError`; deadlines raise
:class:`TimeoutError`.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import attrs
import kr8s.asyncio

__all__ = ["POOL", "Response", "Transport", "TransportError"]

# Connections kept open: the watches hold one each, the rest carry requests. None is closed
# after a burst, so no request pays for a TLS handshake the last one already paid for.
POOL = 48
REAUTHENTICATE = 3


class TransportError(Exception):
    """The apiserver could not be reached, or the connection broke mid-answer."""


@attrs.frozen(kw_only=True)
class Response:
    status: int
    body: bytes


class Transport:
    def __init__(self, api: kr8s.asyncio.Api) -> None:
        self.kr8s = api
        self._session: aiohttp.ClientSession | None = None
        # Set with the session, from the same authentication: the base URL, SNI name and proxy.
        self._server = ""
        self._options: dict[str, object] = {}

    async def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            auth = self.kr8s.auth
            context: ssl.SSLContext | bool = await auth.ssl_context()  # type: ignore[no-untyped-call]
            if self._session is not None and not self._session.closed:
                return self._session  # opened by a request that asked at the same time
            headers = {"User-Agent": f"kubetrain/{kr8s.__version__}"}
            if auth.token:
                headers["Authorization"] = f"Bearer {auth.token}"
            self._server = str(auth.server).rstrip("/")
            self._options = _options(auth)
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=context, limit=POOL),
                headers=headers,
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str],
        body: bytes | None,
        headers: Mapping[str, str],
        timeout: float,
    ) -> Response:
        reauthenticated, resent = 0, False
        while True:
            session = await self._open()
            try:
                async with session.request(
                    method,
                    self._server + path,
                    params=dict(params),
                    data=body,
                    headers=dict(headers),
                    timeout=aiohttp.ClientTimeout(total=timeout),
                    **self._options,  # type: ignore[arg-type]
                ) as r:
                    answer = Response(status=r.status, body=await r.read())
            except TimeoutError:  # aiohttp's read timeout is a ClientError too: keep it a timeout
                raise
            except aiohttp.ClientError as e:
                if resent:
                    raise TransportError(f"{type(e).__name__}: {e}") from e
                resent = True
                await self.close()
                continue
            if answer.status != 401 or reauthenticated == REAUTHENTICATE:
                return answer
            reauthenticated += 1
            await self._reauthenticate()

    @contextlib.asynccontextmanager
    async def stream(
        self, path: str, *, params: Mapping[str, str], timeout: float, read_timeout: float
    ) -> AsyncIterator[tuple[Response, AsyncIterator[bytes]]]:
        """A long GET: its status and, while it is 2xx, its body's lines; a silent body times out.

        An error's body is read whole and given as the response's body, with no lines.
        """
        for attempt in range(REAUTHENTICATE + 1):
            session = await self._open()
            try:
                async with session.get(
                    self._server + path,
                    params=dict(params),
                    timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=read_timeout),
                    **self._options,  # type: ignore[arg-type]
                ) as r:
                    if r.status == 401 and attempt < REAUTHENTICATE:
                        await self._reauthenticate()
                        continue
                    if r.status >= 300:
                        yield Response(status=r.status, body=await r.read()), _no_lines()
                    else:
                        yield Response(status=r.status, body=b""), _lines(r.content)
                    return
            except TimeoutError:
                raise
            except aiohttp.ClientError as e:
                raise TransportError(f"{type(e).__name__}: {e}") from e

    async def _reauthenticate(self) -> None:
        await self.kr8s.auth.reauthenticate()
        await self.close()


def _options(auth: Any) -> dict[str, object]:  # kr8s's KubeAuth (untyped)
    options: dict[str, object] = {}
    if auth.tls_server_name:
        options["server_hostname"] = auth.tls_server_name
    if auth.proxy:
        options["proxy"] = auth.proxy
    return options


async def _lines(content: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    # Not ``async for line in content``: aiohttp refuses lines over its read buffer (64 KiB),
    # and one watch event is one line of any length.
    pending = b""
    async for chunk in content.iter_any():
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line:
                yield line
    if pending:
        yield pending


async def _no_lines() -> AsyncIterator[bytes]:
    return
    yield  # pragma: no cover  # an async generator with nothing in it
