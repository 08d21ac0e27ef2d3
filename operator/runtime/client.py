"""Every request the operator makes goes through one door.

kr8s supplies configuration and authentication, :mod:`~.transport` the HTTP; :class:`Client` adds
what an operator must have on top: a timeout on every request, a client-side QPS and
burst limit (a token bucket shared by all requests), writes as patches only — JSON
merge patches (optionally to the status subresource) or server-side apply with one field
manager — and a child span for every write. :class:`Resource` (from
:mod:`kubetrain.operator.resources`, re-exported) names an API resource and builds its paths.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

import kr8s.asyncio
from opentelemetry import trace

from kubetrain.api import v1beta1
from kubetrain.operator.resources import Resource
from kubetrain.operator.runtime import metrics, ratelimit, transport

__all__ = [
    "CHILDREN",
    "CLUSTER_TRAINING_RUNTIMES",
    "CONFIGMAPS",
    "CRDS",
    "DEPLOYMENTS",
    "EVENTS",
    "LEASES",
    "MUTATING_WEBHOOK_CONFIGURATIONS",
    "NODES",
    "PODS",
    "POD_TEMPLATES",
    "SECRETS",
    "SERVICES",
    "TRAININGJOBS",
    "TRAINING_RUNTIMES",
    "VALIDATING_WEBHOOK_CONFIGURATIONS",
    "ApiError",
    "Client",
    "Resource",
    "SilentWatchError",
    "merge_patch_between",
]

FIELD_MANAGER = "kubetrain-operator"
_tracer = trace.get_tracer("kubetrain.operator.runtime.client")


PODS = Resource("", "v1", "pods", "Pod")
POD_TEMPLATES = Resource("", "v1", "podtemplates", "PodTemplate")
SERVICES = Resource("", "v1", "services", "Service")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
EVENTS = Resource("", "v1", "events", "Event")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
MUTATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    False,
)
VALIDATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    False,
)
TRAININGJOBS = Resource(v1beta1.GROUP, v1beta1.VERSION, v1beta1.PLURAL, v1beta1.KIND)
CLUSTER_TRAINING_RUNTIMES = Resource(
    v1beta1.GROUP,
    v1beta1.VERSION,
    v1beta1.runtime_types.CLUSTER_PLURAL,
    v1beta1.runtime_types.CLUSTER_KIND,
    False,
)
TRAINING_RUNTIMES = Resource(
    v1beta1.GROUP, v1beta1.VERSION, v1beta1.runtime_types.PLURAL, v1beta1.runtime_types.KIND
)
# What a TrainingJob renders, by kind.
CHILDREN = {r.kind: r for r in (PODS, POD_TEMPLATES, SERVICES, CONFIGMAPS, SECRETS, DEPLOYMENTS)}


class ApiError(Exception):
    """A request the apiserver refused; ``status`` is the HTTP status, ``reason`` its Status reason."""

    def __init__(
        self, status: int, reason: str, message: str, causes: tuple[Mapping[str, Any], ...] = ()
    ) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status, self.reason, self.message = status, reason, message
        # The Status's details.causes: {field, reason, message} per refused field, for 422s.
        self.causes = causes

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def gone(self) -> bool:
        return self.status == 410


class SilentWatchError(ApiError):
    """A watch that said nothing, not even a bookmark, for its read timeout: a quiet watch or a
    dead connection, which look alike. Not the apiserver's refusal of anything."""

    def __init__(self) -> None:
        super().__init__(504, "Timeout", "watch was silent too long")


class NotLeaderError(RuntimeError):
    """A write refused because this process does not hold leadership right now."""


class _TokenBucket:
    def __init__(self, qps: float, burst: int) -> None:
        self.qps, self.burst = qps, burst
        self._bucket = ratelimit.BucketRateLimiter(qps, burst, time.monotonic)
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        async with self._lock:
            delay = self._bucket.when(None)
        if delay > 0:
            await asyncio.sleep(delay)


class Client:
    def __init__(
        self,
        http: transport.Transport,
        *,
        qps: float = 20.0,
        burst: int = 30,
        timeout: float = 30.0,
        field_manager: str = FIELD_MANAGER,
    ) -> None:
        self._http = http
        self._bucket = _TokenBucket(qps, burst)
        self.timeout = timeout
        self.field_manager = field_manager
        # Fencing: the manager points this at its leader elector, so a process that lost
        # leadership (paused, partitioned, slow) can no longer write anything.
        self.write_gate: Callable[[], bool] = lambda: True

    def ungated(self, qps: float | None = None, burst: int | None = None) -> Client:
        """A client on the same session without the write gate (for the Lease itself), with a
        rate limit of its own (this one's, unless given)."""
        return Client(
            self._http,
            qps=self._bucket.qps if qps is None else qps,
            burst=self._bucket.burst if burst is None else burst,
            timeout=self.timeout,
            field_manager=self.field_manager,
        )

    @classmethod
    async def connect(cls, kubeconfig: str | None = None, **options: Any) -> Client:
        # Not kr8s.asyncio.api(): it caches by id(event loop), and a new loop can reuse the id
        # of a closed one and get its dead session back.
        api = await kr8s.asyncio.Api(kubeconfig=kubeconfig, bypass_factory=True)
        return cls(transport.Transport(api), **options)

    async def close(self) -> None:
        """Close the connections (of every client on this one's session)."""
        await self._http.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def request(
        self,
        method: str,
        resource: Resource,
        *,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
        text: bool = False,
    ) -> Any:
        """The apiserver's answer, decoded from JSON (``text``: the body as text, a log say)."""
        if method != "GET" and not self.write_gate():
            raise NotLeaderError(f"{method} {resource.plural}/{name or ''} refused: not the leader")
        await self._bucket.acquire()
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        sent, code = time.monotonic(), 0
        try:
            response = await self._http.request(
                method,
                resource.path(namespace, name, subresource),
                params=params or {},
                body=None if body is None else json.dumps(body).encode(),
                headers=headers,
                timeout=timeout or self.timeout,
            )
            code = response.status
        except TimeoutError as e:
            raise ApiError(504, "Timeout", f"no answer within {timeout or self.timeout:g}s") from e
        except transport.TransportError as e:
            raise ApiError(503, "Unavailable", str(e)) from e
        finally:
            metrics.REST_CLIENT_LATENCY.labels(method).observe(time.monotonic() - sent)
            metrics.REST_CLIENT_REQUESTS.labels(str(code), method).inc()
        if text and response.status < 400:
            return response.body.decode(errors="replace")
        return _decode(response)

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Any:
        return await self.request("GET", resource, namespace=namespace, name=name)

    async def list(self, resource: Resource, namespace: str | None = None, **params: str) -> Any:
        return await self.request("GET", resource, namespace=namespace, params=params)

    async def create(
        self,
        resource: Resource,
        body: Mapping[str, Any],
        namespace: str | None = None,
        *,
        dry_run: bool = False,
    ) -> Any:
        """Create ``body``; with ``dry_run``, only ask whether the apiserver would (admission included)."""
        with _write_span("create", resource, body.get("metadata", {}).get("name")):
            params = {"dryRun": "All"} if dry_run else None
            return await self.request("POST", resource, namespace=namespace, body=body, params=params)

    async def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
    ) -> Any:
        """Delete ``name``; with ``uid``, only that incarnation of it (else 409 Conflict)."""
        body: dict[str, Any] = {}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if uid is not None:
            body["preconditions"] = {"uid": uid}
        with _write_span("delete", resource, name):
            return await self.request("DELETE", resource, namespace=namespace, name=name, body=body)

    async def merge_patch(
        self,
        resource: Resource,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Any:
        with _write_span("patch", resource, name, subresource):
            return await self.request(
                "PATCH",
                resource,
                namespace=namespace,
                name=name,
                subresource=subresource,
                body=patch,
                content_type="application/merge-patch+json",
            )

    async def apply(self, resource: Resource, body: Mapping[str, Any], namespace: str | None = None) -> Any:
        """Server-side apply with this client's single field manager."""
        name = body["metadata"]["name"]
        with _write_span("apply", resource, name):
            return await self.request(
                "PATCH",
                resource,
                namespace=namespace,
                name=name,
                body=body,
                params={"fieldManager": self.field_manager, "force": "true"},
                content_type="application/apply-patch+yaml",
            )

    async def stream(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        params: Mapping[str, str],
        read_timeout: float,
    ) -> AsyncIterator[dict[str, Any]]:
        """The events of a watch, one JSON object per line; a silent stream times out."""
        await self._bucket.acquire()
        try:
            async with self._http.stream(
                resource.path(namespace), params=params, timeout=self.timeout, read_timeout=read_timeout
            ) as (response, lines):
                if response.status >= 300:
                    _decode(response)
                async for line in lines:
                    yield json.loads(line)
        except TimeoutError as e:
            raise SilentWatchError() from e
        except transport.TransportError as e:
            raise ApiError(503, "Unavailable", str(e)) from e


def merge_patch_between(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON merge patch (RFC 7386) that turns ``old`` into ``new``: removed keys become null."""
    patch: dict[str, Any] = {k: None for k in old if k not in new}
    for k, v in new.items():
        before = old.get(k)
        if isinstance(v, Mapping) and isinstance(before, Mapping):
            inner = merge_patch_between(before, v)
            if inner:
                patch[k] = inner
        elif v != before or k not in old:
            patch[k] = v
    return patch


def _decode(response: transport.Response) -> Any:
    text = response.body.decode(errors="replace")
    try:
        data = json.loads(response.body) if response.body else {}
    except json.JSONDecodeError:
        data = {"message": text}
    if not isinstance(data, dict):
        data = {"message": text}
    if response.status >= 400:
        causes = (data.get("details") or {}).get("causes") or ()
        raise ApiError(
            response.status,
            str(data.get("reason", "")),
            str(data.get("message", text)),
            tuple(c for c in causes if isinstance(c, Mapping)),
        )
    return data


@contextlib.contextmanager
def _write_span(
    verb: str, resource: Resource, name: str | None, subresource: str | None = None
) -> Iterator[None]:
    """A child span for one API write, under the reconcile span that caused it."""
    title = f"{verb} {resource.kind}" + (f"/{subresource}" if subresource else "")
    attributes = {"k8s.resource": resource.plural, "k8s.name": name or "", "k8s.verb": verb}
    with _tracer.start_as_current_span(title, attributes=attributes):
        yield
