"""The one connection the client has to a cluster: kr8s, plus the errors a person can read.

kr8s finds the cluster (a kubeconfig file, ``KUBECONFIG``, ``~/.kube/config``, or the
pod's service account in a cluster) and holds the authenticated HTTP session;
:class:`Connection` adds a timeout on every request, the paths of the few resources a
user reads, and the translation of what can fail into :mod:`~kubetrain.client.errors`:
a 404 becomes :class:`~kubetrain.client.errors.NotFound` naming what was looked for, any
other refusal :class:`~kubetrain.client.errors.Rejected` with the apiserver's message, and
a cluster that does not answer :class:`~kubetrain.client.errors.Unreachable` with its
address.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import attrs
import httpx
import kr8s
import kr8s.asyncio

from kubetrain.api import v1beta1
from kubetrain.client import errors
from kubetrain.client import kubeconfig as config

__all__ = ["EVENTS", "PODS", "SERVICES", "TRAININGJOBS", "Connection", "Kind", "connect"]

# Requests that are not streams end within this; streams (watches, logs) have no total limit.
TIMEOUT = 30.0


@attrs.frozen
class Kind:
    """A resource the client reads: its name for people, and its path prefix."""

    name: str
    prefix: str
    plural: str

    def path(self, namespace: str | None, name: str | None = None, sub: str | None = None) -> tuple[str, str]:
        """(base, url) for kr8s's ``call_api``."""
        url = "/".join(p for p in (self.plural, name, sub) if p)
        base = f"{self.prefix}/namespaces/{namespace}" if namespace else self.prefix
        return base, url


TRAININGJOBS = Kind(v1beta1.KIND, f"/apis/{v1beta1.API_VERSION}", v1beta1.PLURAL)
PODS = Kind("Pod", "/api/v1", "pods")
SERVICES = Kind("Service", "/api/v1", "services")
EVENTS = Kind("Event", "/api/v1", "events")


async def connect(kubeconfig: str | None, namespace: str | None, context: str | None) -> Connection:
    """A connection to the cluster of ``kubeconfig``'s context; every failure one of the client's
    errors, in one line: a kubeconfig that cannot be used (:mod:`~kubetrain.client.kubeconfig`
    says why, before kr8s reads it), a cluster that does not answer, or refuses us."""
    server = config.check(kubeconfig, context)
    try:
        api = await kr8s.asyncio.api(kubeconfig=kubeconfig, namespace=namespace, context=context)
    except httpx.TransportError as e:
        raise errors.Unreachable(f"cannot reach the cluster at {server}: {_why(e)}") from None
    except kr8s.ServerError as e:
        status = e.response.status_code if e.response is not None else 0
        raise errors.Rejected(f"the cluster at {server} refused us: {_message(e)}", status) from None
    except Exception as e:  # kr8s's own reading of what check() let through
        where = f"kubeconfig {kubeconfig}" if kubeconfig else "the kubeconfig"
        raise errors.InvalidKubeconfig(
            f"cannot use {where}: {str(e).strip() or type(e).__name__}; {config.HINT}"
        ) from None
    return Connection(api)


class Connection:
    def __init__(self, api: Any) -> None:
        self._api = api
        self.kr8s = api  # for what kr8s does itself: port forwarding
        self.namespace: str = api.namespace or "default"
        self.server: str = str(api.auth.server or "the cluster")

    async def request(
        self,
        method: str,
        kind: Kind,
        namespace: str | None,
        name: str | None = None,
        *,
        sub: str | None = None,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        """The response's JSON; ``content_type`` says what ``body`` is (a PATCH: which patch)."""
        base, url = kind.path(namespace, name, sub)
        options: dict[str, Any] = {"timeout": TIMEOUT}
        if params:
            options["params"] = dict(params)
        if body is not None:
            options["content"] = json.dumps(body)
            options["headers"] = {"Content-Type": content_type}
        async with (
            self._errors(kind, name, namespace),
            self._api.call_api(method, version="", base=base, url=url, **options) as response,
        ):
            return response.json()

    @contextlib.asynccontextmanager
    async def stream(
        self,
        kind: Kind,
        namespace: str | None,
        name: str | None = None,
        *,
        sub: str | None = None,
        params: Mapping[str, str] | None = None,
    ) -> AsyncIterator[AsyncIterator[str]]:
        """The response's lines, as they come (a watch, a followed log)."""
        base, url = kind.path(namespace, name, sub)
        # No read timeout: a quiet log or watch is not an error.
        timeout = httpx.Timeout(TIMEOUT, read=None)
        async with (
            self._errors(kind, name, namespace),
            self._api.call_api(
                "GET", version="", base=base, url=url, params=dict(params or {}), stream=True, timeout=timeout
            ) as response,
        ):
            yield response.aiter_lines()

    @contextlib.asynccontextmanager
    async def _errors(self, kind: Kind, name: str | None, namespace: str | None) -> AsyncIterator[None]:
        try:
            yield
        except kr8s.ServerError as e:
            status = e.response.status_code if e.response is not None else 0
            if status == 404 and name:
                raise errors.NotFound(kind.name, name, namespace) from None
            raise errors.Rejected(_message(e), status) from None
        except httpx.TransportError as e:
            raise errors.Unreachable(f"cannot reach the cluster at {self.server}: {_why(e)}") from None

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._api._session.aclose()  # kr8s keeps it open for reuse


def _message(e: kr8s.ServerError) -> str:
    status: dict[str, Any] = e.status if isinstance(e.status, dict) else {}
    message = str(status.get("message") or e)
    causes = (status.get("details") or {}).get("causes") or []
    # The apiserver's message already lists the causes of a 422; others are said once.
    extra = [
        str(c.get("message")) for c in causes if c.get("message") and str(c.get("message")) not in message
    ]
    return "\n".join([message, *extra])


def _why(e: httpx.TransportError) -> str:
    text = str(e) or type(e).__name__
    if isinstance(e, httpx.ConnectError) and "connection attempts failed" in text:
        return "connection refused (is it running? `kubetrain dev up` starts one here)"
    return text
