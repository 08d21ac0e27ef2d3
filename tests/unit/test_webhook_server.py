"""The webhook server speaks TLS with certificates from a directory, and picks up rotated ones."""

from __future__ import annotations

import asyncio
import pathlib
import ssl
from typing import Any

from cryptography import x509

from kubetrain.operator import pki
from kubetrain.operator.runtime import servers


def write_pair(directory: pathlib.Path, ca: pki.KeyPair) -> int:
    pair = pki.issue(ca, "kubetrain-webhook", hosts=("127.0.0.1",), server=True)
    (directory / "tls.crt").write_bytes(pair.cert_pem)
    (directory / "tls.key").write_bytes(pair.key_pem)
    return x509.load_pem_x509_certificate(pair.cert_pem).serial_number


async def served_serial(port: int, ca_file: pathlib.Path, body: bytes) -> tuple[int, bytes]:
    context = ssl.create_default_context(cafile=str(ca_file))
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    ssl_object = writer.get_extra_info("ssl_object")
    serial = x509.load_der_x509_certificate(ssl_object.getpeercert(binary_form=True)).serial_number
    writer.write(
        b"POST /convert HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
    )
    await writer.drain()
    response = await reader.read()
    writer.close()
    return serial, response


async def scenario(tmp_path: pathlib.Path) -> None:
    ca = pki.new_ca("webhook-ca")
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    first = write_pair(tmp_path, ca)
    server = servers.WebhookServer(tmp_path, port=0, host="127.0.0.1", reload_interval=0.1)

    async def echo(body: Any) -> Any:
        return {"echo": body}

    server.register("/convert", echo)
    await server.start()
    try:
        assert server.serving()
        serial, response = await served_serial(server.port, tmp_path / "ca.crt", b'{"uid": "1"}')
        assert serial == first
        assert response.endswith(b'{"echo": {"uid": "1"}}')
        second = write_pair(tmp_path, ca)
        for _ in range(50):
            await asyncio.sleep(0.1)
            serial, _ = await served_serial(server.port, tmp_path / "ca.crt", b"{}")
            if serial == second:
                break
        assert serial == second
        # A broken rotation keeps the last good certificate.
        (tmp_path / "tls.crt").write_text("not a certificate")
        await asyncio.sleep(0.3)
        assert (await served_serial(server.port, tmp_path / "ca.crt", b"{}"))[0] == second
        _, bad = await served_serial(server.port, tmp_path / "ca.crt", b"not json")
        assert b"400" in bad.split(b"\r\n")[0]
    finally:
        await server.stop()


def test_serves_tls_and_reloads_rotated_certificates(tmp_path: pathlib.Path) -> None:
    asyncio.run(scenario(tmp_path))


async def large_and_deep(tmp_path: pathlib.Path) -> None:
    ca = pki.new_ca("webhook-ca")
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    write_pair(tmp_path, ca)
    server = servers.WebhookServer(tmp_path, port=0, host="127.0.0.1")

    async def size(body: Any) -> Any:
        return {"chars": len(body["image"]) if "image" in body else -1}

    server.register("/convert", size)
    await server.start()
    try:
        # A 3 MiB object: the apiserver's own request limit, well past aiohttp's 1 MiB default.
        _, response = await served_serial(
            server.port, tmp_path / "ca.crt", b'{"image": "%s"}' % (b"x" * (3 << 20))
        )
        assert response.split(b"\r\n")[0] == b"HTTP/1.1 200 OK"
        assert response.endswith(b'{"chars": 3145728}')
        # As deep as the apiserver decodes (10,000 levels): answered, not a 500.
        deep = b'{"a":' * 10_000 + b"1" + b"}" * 10_000
        _, response = await served_serial(server.port, tmp_path / "ca.crt", deep)
        assert response.split(b"\r\n")[0] == b"HTTP/1.1 200 OK"
        assert response.endswith(b'{"chars": -1}')
    finally:
        await server.stop()


def test_reads_reviews_as_large_and_as_deep_as_the_apiserver_sends(tmp_path: pathlib.Path) -> None:
    asyncio.run(large_and_deep(tmp_path))
