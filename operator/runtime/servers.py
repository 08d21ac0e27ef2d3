"""The manager's HTTP servers: probes, metrics, and the HTTPS webhook server.

- ``/healthz`` answers 200 while the process is alive and its checks pass; ``/readyz``
  only once every readiness check passes (caches synced, webhook serving).
- ``/metrics`` is :data:`~.metrics.REGISTRY` in the Prometheus text format.
- The webhook server serves registered POST handlers over TLS on ``port`` (9443) with
  ``tls.crt``/``tls.key`` from ``cert_dir``, and reloads them when they change on disk
  (cert-manager rotates them in place), without dropping the listener.
"""

from __future__ import annotations

import asyncio
import json
import logging
import pathlib
import ssl
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from kubetrain.operator.runtime import metrics

__all__ = ["Check", "Server", "WebhookServer", "metrics_app", "probes_app"]

log = logging.getLogger(__name__)

Check = Callable[[], bool]
Handler = Callable[[Any], Awaitable[Any]]


def probes_app(healthz: Mapping[str, Check], readyz: Mapping[str, Check]) -> web.Application:
    def endpoint(checks: Mapping[str, Check]) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(_request: web.Request) -> web.Response:
            failed = [name for name, check in checks.items() if not check()]
            if failed:
                return web.Response(status=503, text="failed: " + ", ".join(failed) + "\n")
            return web.Response(text="ok\n")

        return handle

    app = web.Application()
    app.router.add_get("/healthz", endpoint(healthz))
    app.router.add_get("/readyz", endpoint(readyz))
    return app


def metrics_app() -> web.Application:
    async def handle(_request: web.Request) -> web.Response:
        body = generate_latest(metrics.REGISTRY)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/metrics", handle)
    return app


class Server:
    """One aiohttp application on one address (``host:port``; ``0`` disables it)."""

    def __init__(self, app: web.Application, bind: str, ssl_context: ssl.SSLContext | None = None) -> None:
        self.app, self.bind, self.ssl_context = app, bind, ssl_context
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def enabled(self) -> bool:
        return self.bind not in ("0", "")

    async def start(self) -> None:
        if not self.enabled:
            return
        host, _, port = self.bind.rpartition(":")
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host or "0.0.0.0", int(port), ssl_context=self.ssl_context)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


# A review carries an object and, on updates, the old one: each up to the apiserver's 3 MiB
# request limit. Past aiohttp's 1 MiB default the apiserver would get a 413, and the user an
# InternalError instead of the webhook's answer naming the field.
MAX_REVIEW_BYTES = 8 * 1024 * 1024
# The apiserver decodes JSON nested up to 10,000 levels; Python's parser recurses once per
# level, so the webhook must be able to read as deep to answer at all.
RECURSION_LIMIT = 12_000


class WebhookServer:
    def __init__(
        self, cert_dir: pathlib.Path, port: int = 9443, host: str = "0.0.0.0", reload_interval: float = 2.0
    ) -> None:
        self.cert_dir, self.reload_interval = cert_dir, reload_interval
        self.ssl_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._loaded: tuple[float, float] | None = None
        self._app = web.Application(client_max_size=MAX_REVIEW_BYTES)
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        self._server = Server(self._app, f"{host}:{port}", self.ssl_context)
        self._reloader: asyncio.Task[None] | None = None
        self.handlers: list[str] = []

    @property
    def port(self) -> int:
        return self._server.port

    def register(self, path: str, handler: Handler) -> None:
        """Serve ``handler(json_body) -> json_response`` at POST ``path``."""

        async def handle(request: web.Request) -> web.Response:
            try:
                body = json.loads(await request.read())
            except ValueError:
                return web.json_response({"message": "the request body is not JSON"}, status=400)
            return web.json_response(await handler(body))

        self._app.router.add_post(path, handle)
        self.handlers.append(path)

    def serving(self) -> bool:
        return self._loaded is not None and self._server.port != 0

    async def start(self) -> None:
        self._reload()
        await self._server.start()
        self._reloader = asyncio.create_task(self._watch_certs())

    async def stop(self) -> None:
        if self._reloader is not None:
            self._reloader.cancel()
        await self._server.stop()

    def _reload(self) -> bool:
        cert, key = self.cert_dir / "tls.crt", self.cert_dir / "tls.key"
        stamp = (cert.stat().st_mtime, key.stat().st_mtime)
        if stamp == self._loaded:
            return False
        # New handshakes use the new pair; established connections keep theirs.
        self.ssl_context.load_cert_chain(cert, key)
        self._loaded = stamp
        return True

    async def _watch_certs(self) -> None:
        while True:
            await asyncio.sleep(self.reload_interval)
            try:
                if self._reload():
                    log.info("webhook certificate reloaded from %s", self.cert_dir)
            except (OSError, ssl.SSLError) as e:
                log.warning("webhook certificate not reloaded (keeping the current one): %s", e)
