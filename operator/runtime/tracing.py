"""OpenTelemetry tracing, configured from the standard OTEL_* variables.

Nothing is exported unless asked for: ``OTEL_TRACES_EXPORTER`` (``otlp``, ``console`` or
``none``) chooses, and when it is unset an ``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT``
implies ``otlp``. ``OTEL_SDK_DISABLED=true`` turns everything off. The OTLP exporter is
OTLP/HTTP (protobuf) and reads its endpoint, headers and timeout from the environment;
``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` name the service.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

__all__ = ["configure", "exporter_name"]

DEFAULT_SERVICE = "kubetrain-operator"


def exporter_name(env: Mapping[str, str] = os.environ) -> str:
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return "none"
    chosen = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if chosen:
        return chosen
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    return "otlp" if endpoint else "none"


def configure(env: Mapping[str, str] = os.environ) -> TracerProvider | None:
    """Install a TracerProvider if the environment asks for an exporter; return it."""
    name = exporter_name(env)
    if name == "none":
        return None
    exporter: SpanExporter
    if name == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    elif name == "console":
        exporter = ConsoleSpanExporter()
    else:
        raise ValueError(f"OTEL_TRACES_EXPORTER={name!r} is not supported (otlp, console or none)")
    service = env.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider
