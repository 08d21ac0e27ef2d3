"""A leader-election candidate as its own process, for tests that kill and pause it.

    python -P -m testkit.elect KUBECONFIG NAMESPACE IDENTITY

While it leads it writes ``{identity}-{n}: <monotonic time>`` into ConfigMap ``writes``
every 0.2 s through a client fenced by the elector. SIGTERM shuts it down cleanly,
releasing the Lease (exit 0); losing leadership ends it with exit status 1, as a
controller-runtime manager exits to be restarted as a fresh candidate.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time

from kubetrain.operator.runtime import client, leaderelection


async def main(kubeconfig: str, namespace: str, identity: str) -> None:
    elector = leaderelection.LeaderElector(
        await client.Client.connect(kubeconfig, timeout=5),
        leaderelection.Config(name="candidates", namespace=namespace, identity=identity),
    )
    writer = await client.Client.connect(kubeconfig, timeout=5)
    writer.write_gate = elector.may_write
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    election = asyncio.create_task(elector.run())
    print("ready", flush=True)
    n = 0
    while not stop.is_set() and not election.done():
        if elector.leading:
            try:
                await writer.merge_patch(
                    client.CONFIGMAPS,
                    "writes",
                    {"data": {f"{identity}-{n}": f"{time.time():.3f}"}},
                    namespace,
                )
                n += 1
            except (client.NotLeaderError, client.ApiError):
                pass
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.2)
    if elector.lost.is_set():
        sys.exit(1)
    election.cancel()
    await elector.release()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
