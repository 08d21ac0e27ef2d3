"""The progress reader's schedule: each job read at most once per interval, beside the workers; a
new line told once; a finished job read a last time; a forgotten one never again; the whole
operator's reads on one budget, and none while other work waits.

The apiserver is a stand-in that answers log reads from a dict (the reads against a real one
are tests/integration/test_progress.py and tests/e2e/test_progress.py); the clock is the test's.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kubetrain.operator import progress_reader
from kubetrain.operator.policies import progress
from kubetrain.operator.runtime import client


class Logs:
    def __init__(self) -> None:
        self.lines: dict[str, str] = {}
        self.reads: list[str] = []

    async def request(self, method: str, resource: client.Resource, **kw: Any) -> str:
        assert (method, resource, kw["subresource"], kw["text"]) == ("GET", client.PODS, "log", True)
        self.reads.append(kw["name"])
        if kw["name"] not in self.lines:
            raise client.ApiError(400, "BadRequest", "container is waiting to start")
        return self.lines[kw["name"]]


def reader(
    budget: float = progress_reader.DEFAULT_BUDGET, busy: list[bool] | None = None
) -> tuple[progress_reader.Reader, Logs, list[float], list[tuple[str, str]]]:
    logs, now, told = Logs(), [0.0], []
    r = progress_reader.Reader(logs, interval=60, budget=budget, clock=lambda: now[0])  # type: ignore[arg-type]
    r.listen(lambda ns, name: told.append((ns, name)), busy=lambda: bool(busy and busy[0]))
    return r, logs, now, told


def test_a_job_is_read_at_once_then_once_an_interval_and_a_new_line_told_once() -> None:
    r, logs, now, told = reader()
    logs.lines["j-master-0"] = "progress step=5 total=10\n"
    r.want("ns", "j", "j-master-0")
    r.want("ns", "j", "j-master-0")  # asked again by the next pass: still one read
    assert asyncio.run(r.read_due()) == 1
    assert told == [("ns", "j")]
    assert r.take("ns", "j") == progress.Reading(pod="j-master-0", step=5, total=10)
    assert r.take("ns", "j") is None, "taken once"
    now[0] = 59
    assert asyncio.run(r.read_due()) == 0
    now[0] = 60
    assert asyncio.run(r.read_due()) == 1
    assert told == [("ns", "j")], "the same line is not told again"
    logs.lines["j-master-0"] = "progress step=5 total=10\nprogress step=7 total=10\n"
    now[0] = 120
    asyncio.run(r.read_due())
    assert told == [("ns", "j")] * 2
    assert r.take("ns", "j") == progress.Reading(pod="j-master-0", step=7, total=10)


def test_an_unreadable_log_is_read_again_an_interval_later() -> None:
    r, _logs, now, told = reader()
    r.want("ns", "j", "j-master-0")
    assert asyncio.run(r.read_due()) == 1
    assert r.take("ns", "j") is None
    assert told == []
    now[0] = 60
    assert asyncio.run(r.read_due()) == 1


def test_a_finished_job_is_read_a_last_time_and_a_forgotten_one_never() -> None:
    r, logs, now, _told = reader()
    logs.lines["j-master-0"] = "progress step=130 total=200\n"
    r.want("ns", "j", "j-master-0")
    asyncio.run(r.read_due())
    logs.lines["j-master-0"] += "progress step=200 total=200\n"  # printed as its agent stopped
    now[0] = 10
    # The pass that sees the first rank ended comes before the one that sees the job finished.
    r.pause("ns", "j")
    now[0] = 70
    assert asyncio.run(r.read_due()) == 0, "no reads while it does not run"
    r.want("ns", "j", "j-master-0", finished=True)
    now[0] = 80
    assert asyncio.run(r.read_due()) == 0, "not while its pod may still be stopping its agent"
    # The pass that sees the pod ended (the kubelet says so once every container stopped).
    r.want("ns", "j", "j-master-0", finished=True, ended=True)
    assert asyncio.run(r.read_due()) == 1
    assert r.take("ns", "j") == progress.Reading(pod="j-master-0", step=200, total=200)
    now[0] = 1000
    r.want("ns", "j", "j-master-0", finished=True, ended=True)
    assert asyncio.run(r.read_due()) == 0, "read once after it finished"
    # A job never read while it ran (finished before, the operator since restarted) is not read.
    r.want("ns", "other", "other-master-0", finished=True)
    r.want("ns", "gone", "gone-master-0")
    r.forget("ns", "gone")
    assert asyncio.run(r.read_due()) == 0
    assert logs.reads == ["j-master-0", "j-master-0"]


def test_a_finished_job_whose_pod_is_not_seen_to_end_is_read_a_last_time_after_the_fallback() -> None:
    r, logs, now, _told = reader()
    logs.lines["j-master-0"] = "progress step=130 total=200\n"
    r.want("ns", "j", "j-master-0")
    asyncio.run(r.read_due())
    now[0] = 10
    r.want("ns", "j", "j-master-0", finished=True)  # its node lost: the pod never says it ended
    now[0] = 10 + progress_reader.LAST_READ_FALLBACK - 1
    r.want("ns", "j", "j-master-0", finished=True)
    assert asyncio.run(r.read_due()) == 0, "a pass that sees nothing new does not put it off"
    logs.lines["j-master-0"] += "progress step=200 total=200\n"
    now[0] = 10 + progress_reader.LAST_READ_FALLBACK
    assert asyncio.run(r.read_due()) == 1
    assert r.take("ns", "j") == progress.Reading(pod="j-master-0", step=200, total=200)
    r.want("ns", "j", "j-master-0", finished=True, ended=True)
    now[0] = 1000
    assert asyncio.run(r.read_due()) == 0, "its end seen after the last read brings no other"
    assert logs.reads == ["j-master-0", "j-master-0"]


def test_reads_are_bounded_in_flight() -> None:
    r, logs, _now, told = reader(budget=100)
    inflight, most = [0], [0]

    async def slow(method: str, resource: client.Resource, **kw: Any) -> str:
        inflight[0] += 1
        most[0] = max(most[0], inflight[0])
        await asyncio.sleep(0.01)
        inflight[0] -= 1
        return "progress step=1\n"

    logs.request = slow  # type: ignore[method-assign]
    for i in range(20):
        r.want("ns", f"j{i}", f"j{i}-master-0")
    assert asyncio.run(r.read_due()) == 20
    assert most[0] == progress_reader.CONCURRENCY
    assert len(told) == 20


def test_the_operator_reads_at_most_its_budget_and_jobs_take_turns_oldest_first() -> None:
    r, logs, now, _told = reader(budget=2)
    for i in range(200):  # more than budget x interval = 120
        logs.lines[f"j{i}-master-0"] = "progress step=1\n"
        r.want("ns", f"j{i}", f"j{i}-master-0")
        now[0] += 0.001
    reads = 0
    for tick in range(1, 3001):
        now[0] = tick / 10
        reads += asyncio.run(r.read_due())
    # 2 a second for 300 s (the first second's on top): each job read every 200 / 2 = 100 s, not 60.
    assert reads == 2 * 300 + 1
    counts = {name: logs.reads.count(name) for name in set(logs.reads)}
    assert len(counts) == 200
    assert set(counts.values()) <= {3, 4}, counts
    assert logs.reads[:200] == [f"j{i}-master-0" for i in range(200)], "in the order they were wanted"


def test_a_last_read_goes_before_the_running_jobs_turns() -> None:
    r, logs, now, _told = reader(budget=1)
    for i in range(5):
        r.want("ns", f"j{i}", f"j{i}-master-0")
    now[0] = 1
    asyncio.run(r.read_due())
    assert logs.reads == ["j0-master-0"]
    r.want("ns", "j0", "j0-master-0", finished=True, ended=True)
    now[0] = 2
    assert asyncio.run(r.read_due()) == 1
    assert logs.reads[-1] == "j0-master-0", "the finished job's last read, ahead of j1..j4 waiting since 0"


def test_no_read_starts_while_the_controller_is_busy() -> None:
    busy = [True]
    r, _logs, now, _told = reader(busy=busy)
    r.want("ns", "j", "j-master-0")
    now[0] = 100
    assert asyncio.run(r.read_due()) == 0
    assert r.next_wait() == progress_reader.BUSY_POLL
    busy[0] = False
    assert asyncio.run(r.read_due()) == 1
    assert r.next_wait() == 60, "then the next turn, an interval later"


def test_the_wait_before_the_next_read_is_until_a_job_is_due_or_the_budget_has_room() -> None:
    r, _logs, now, _told = reader(budget=2)
    assert r.next_wait() is None, "no job: wait for one"
    for i in range(3):
        r.want("ns", f"j{i}", f"j{i}-master-0")
    now[0] = 0.5
    assert asyncio.run(r.read_due()) == 2, "one second's worth at most"
    assert r.next_wait() == 0.5, "a token in half a second at 2 a second"
