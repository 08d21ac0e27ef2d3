"""The webhook Service's stand-in: one address on 127.0.0.1 in front of both replicas' webhooks.

    python -P -m kubetrain_bench.ha.balancer PORT WEBHOOK_PORT:PROBE_PORT [WEBHOOK_PORT:PROBE_PORT ...]

In a cluster the apiserver calls the webhooks through their Service, whose endpoints are the
manager pods that are Ready; kube-proxy sends each new connection to one of them. Here both
replicas are local processes, so this process plays both parts: it accepts TCP connections on
``PORT`` and passes each, bytes both ways (TLS ends at the replica), to the next ready replica
in turn. A replica is ready while its ``/readyz`` answers 200, asked every ``--period`` seconds
(1 s: how soon a kubelet notices a container that died and takes its pod out of the endpoints,
not the readiness probe's own period). Until then, a connection sent to a replica that died is
refused or cut, as a connection to a dead pod's address would be: the apiserver's call fails.

Each change of a replica's readiness is printed on stdout as ``<unix time> <webhook port>
ready|gone``, for the benchmark to read back.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import sys
import time

import attrs


@attrs.define(kw_only=True)
class Backend:
    port: int
    probe: int
    ready: bool = False


async def _probe(backend: Backend, timeout: float) -> bool:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", backend.probe), timeout)
    except (OSError, TimeoutError):
        return False
    try:
        writer.write(b"GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), timeout)
        return line.split()[1:2] == [b"200"]
    except (OSError, TimeoutError, IndexError):
        return False
    finally:
        writer.close()


async def _watch(backends: list[Backend], period: float) -> None:
    while True:
        for b, ready in zip(
            backends, await asyncio.gather(*(_probe(b, period) for b in backends)), strict=True
        ):
            if ready != b.ready:
                b.ready = ready
                print(f"{time.time():.3f} {b.port} {'ready' if ready else 'gone'}", flush=True)
        await asyncio.sleep(period)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(OSError):
        writer.close()


async def serve(port: int, backends: list[Backend], period: float) -> None:
    turn = itertools.cycle(backends)

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in backends:  # the next ready one in turn
            backend = next(turn)
            if backend.ready:
                break
        else:
            writer.close()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", backend.port)
        except OSError:
            writer.close()  # refused: what a connection to a dead pod's address gets
            return
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))

    server = await asyncio.start_server(accept, "127.0.0.1", port)
    async with server:
        await _watch(backends, period)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("port", type=int)
    p.add_argument("backends", nargs="+", help="WEBHOOK_PORT:PROBE_PORT of each replica")
    p.add_argument("--period", type=float, default=1.0)
    args = p.parse_args(argv)
    try:
        backends = [Backend(port=int(w), probe=int(r)) for w, r in (b.split(":") for b in args.backends)]
    except ValueError:
        p.error("each backend is WEBHOOK_PORT:PROBE_PORT")
    asyncio.run(serve(args.port, backends, args.period))
    return 0


if __name__ == "__main__":
    sys.exit(main())
