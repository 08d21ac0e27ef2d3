"""Spans reach a real OTLP/HTTP receiver, with the reconcile's attributes and a child span per write."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from testkit.builders import a_job

from kubetrain.api import scheme
from kubetrain.devcluster import cluster as devcluster

TESTS = pathlib.Path(__file__).resolve().parents[1]


class Receiver(ThreadingHTTPServer):
    """An OTLP/HTTP trace endpoint: POST /v1/traces with an ExportTraceServiceRequest."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.requests.append(request)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(b"")

    def log_message(self, *args: Any) -> None:
        pass


def _value(v: Any) -> Any:
    return getattr(v, v.WhichOneof("value"))


def test_spans_reach_an_otlp_receiver(cluster: devcluster.Cluster, namespace: str) -> None:
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps(scheme.encode(a_job("traced").namespace(namespace).replicas("Worker", 1).build())),
    )
    receiver = Receiver()
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    env = {
        **os.environ,
        "PYTHONPATH": str(TESTS),
        "OTEL_SERVICE_NAME": "kubetrain-test",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{receiver.server_address[1]}/v1/traces",
    }
    env.pop("OTEL_SDK_DISABLED", None)
    env.pop("OTEL_TRACES_EXPORTER", None)
    run = subprocess.run(
        [sys.executable, "-P", "-m", "testkit.traced", str(cluster.kubeconfig), namespace],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    receiver.shutdown()
    assert run.returncode == 0, run.stderr

    spans = {}
    for request in receiver.requests:
        for resource_spans in request.resource_spans:
            service = {a.key: _value(a.value) for a in resource_spans.resource.attributes}["service.name"]
            assert service == "kubetrain-test"
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    spans[span.name] = span
    reconcile, write = spans["reconcile"], spans["patch TrainingJob/status"]
    attributes = {a.key: _value(a.value) for a in reconcile.attributes}
    assert attributes == {
        "controller": "traced",
        "k8s.key": f"{namespace}/traced",
        "k8s.generation": 1,
        "result": "success",
    }
    assert write.trace_id == reconcile.trace_id
    assert write.parent_span_id == reconcile.span_id
    assert {a.key: _value(a.value) for a in write.attributes}["k8s.verb"] == "patch"

    lines = [json.loads(line) for line in run.stderr.splitlines() if line.startswith("{")]
    (logged,) = [entry for entry in lines if entry["message"] == f"reconciling {namespace}/traced"]
    assert logged["trace_id"] == reconcile.trace_id.hex()
    assert logged["span_id"] == reconcile.span_id.hex()
