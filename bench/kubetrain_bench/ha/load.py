"""The load the failover benchmark keeps up through the switch: admission requests and job changes.

Both are sent at a steady rate, each request in a task of its own, however long the answers
take (so a stalled webhook does not slow the rate down and hide what it lost):

- :func:`admissions`: server-side dry-run creates of a valid TrainingJob (``dryRun=All``: the
  apiserver runs every webhook and stores nothing). An answer is ``ok`` (allowed), ``timeout``
  (no answer within the client's timeout, or the apiserver's 504) or ``failed`` (anything else:
  with failurePolicy Fail, the apiserver's 500 when it could not reach a webhook);
- :func:`creates`: new jobs, ``concurrency`` at a time (a create is a change too: generation 1);
- :func:`changes`: a change of one running job after another, round robin: its
  ``spec.runPolicy.ttlSecondsAfterFinished`` set to a new value, which bumps
  ``metadata.generation`` and changes nothing the pods see. The operator's next status write
  for the job carries ``status.observedGeneration``: the change is reflected.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import attrs

from kubetrain.operator.runtime import client
from kubetrain_bench.jobs.common import Obj


def _short(message: str) -> str:
    """The start and the end of a long message: the apiserver puts a webhook's URL in the
    middle and why the call failed at the end."""
    return message if len(message) <= 240 else f"{message[:100]} ... {message[-140:]}"


@attrs.frozen(kw_only=True)
class Answer:
    sent: float
    seconds: float
    outcome: str  # ok, failed, timeout
    message: str = ""


@attrs.frozen(kw_only=True)
class Change:
    job: str
    sent: float
    answered: float
    generation: int  # 0: refused
    message: str = ""


async def _paced(
    rate: float, stop: asyncio.Event, send: Callable[[], Coroutine[Any, Any, None]]
) -> list[asyncio.Task[None]]:
    tasks = []
    start = time.perf_counter()
    for i in itertools.count():
        if stop.is_set():
            break
        tasks.append(asyncio.create_task(send()))
        # On a schedule, not after a sleep each: the rate holds while the loop is busy.
        await asyncio.sleep(max(0.0, start + (i + 1) / rate - time.perf_counter()))
    return tasks


async def admissions(
    api: client.Client, body: Obj, namespace: str, rate: float, stop: asyncio.Event
) -> list[Answer]:
    answers: list[Answer] = []

    async def one() -> None:
        sent = time.perf_counter()
        outcome, message = "ok", ""
        try:
            await api.create(client.TRAININGJOBS, body, namespace, dry_run=True)
        except client.ApiError as e:
            outcome, message = ("timeout" if e.status == 504 else "failed"), _short(f"{e.status} {e.message}")
        answers.append(
            Answer(sent=sent, seconds=time.perf_counter() - sent, outcome=outcome, message=message)
        )

    await asyncio.gather(*await _paced(rate, stop, one))
    return answers


async def changes(
    api: client.Client, jobs: Sequence[str], namespace: str, rate: float, stop: asyncio.Event
) -> list[Change]:
    made: list[Change] = []
    turn = itertools.cycle(jobs)
    values = itertools.count(100_000)

    async def one() -> None:
        job, sent = next(turn), time.perf_counter()
        patch = {"spec": {"runPolicy": {"ttlSecondsAfterFinished": next(values)}}}
        try:
            stored = await api.merge_patch(client.TRAININGJOBS, job, patch, namespace)
            generation, message = int(stored["metadata"]["generation"]), ""
        except client.ApiError as e:
            generation, message = 0, _short(f"{e.status} {e.message}")
        made.append(
            Change(job=job, sent=sent, answered=time.perf_counter(), generation=generation, message=message)
        )

    await asyncio.gather(*await _paced(rate, stop, one))
    return made


async def creates(api: client.Client, bodies: Sequence[Obj], concurrency: int) -> list[Change]:
    made: list[Change] = []
    sem = asyncio.Semaphore(concurrency)

    async def one(body: Obj) -> None:
        async with sem:
            name, sent = body["metadata"]["name"], time.perf_counter()
            try:
                await api.create(client.TRAININGJOBS, body, body["metadata"]["namespace"])
                generation, message = 1, ""
            except client.ApiError as e:
                generation, message = 0, _short(f"{e.status} {e.message}")
            made.append(
                Change(
                    job=name, sent=sent, answered=time.perf_counter(), generation=generation, message=message
                )
            )

    await asyncio.gather(*(one(b) for b in bodies))
    return made
