"""Condition bookkeeping, status merge patches and pod tombstones."""

import datetime

from kubetrain.operator import conditions
from kubetrain.operator.runtime import cache, client

T = datetime.datetime(2026, 11, 21, 12, 0, tzinfo=datetime.UTC)
LATER = T + datetime.timedelta(minutes=1)


def test_the_transition_time_moves_only_when_the_status_does() -> None:
    conds = conditions.set_status((), "Running", True, "Running", "up", T)
    conds = conditions.set_status(conds, "Running", True, "StillRunning", "still up", LATER)
    (c,) = conds
    assert (c.reason, c.message, c.last_transition_time) == ("StillRunning", "still up", T)
    (c,) = conditions.set_status(conds, "Running", False, "Stopped", "", LATER)
    assert c.last_transition_time == LATER
    assert not c.is_true()


def test_reasons_from_elsewhere_become_valid_condition_reasons() -> None:
    assert conditions.reason("Rule:oom") == "Rule:oom"
    assert conditions.reason("Out of memory!") == "Outofmemory"
    assert conditions.reason("137") == "R137"
    assert conditions.reason("") == "Unknown"


def test_a_merge_patch_nulls_what_went_and_carries_only_what_changed() -> None:
    old = {"startTime": "t", "restarts": {"userCode": 1, "infrastructure": 2}, "conditions": [1]}
    new = {"restarts": {"userCode": 2, "infrastructure": 2}, "conditions": [1, 2], "state": "Running"}
    assert client.merge_patch_between(old, new) == {
        "startTime": None,
        "restarts": {"userCode": 2},
        "conditions": [1, 2],
        "state": "Running",
    }
    assert client.merge_patch_between(new, new) == {}


def test_tombstones_are_filed_by_owner_and_expire() -> None:
    now = [0.0]
    t = cache.Tombstones(cache.by_owner(), ttl=10, clock=lambda: now[0])
    pod = {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "uid": "u1",
            "ownerReferences": [{"kind": "TrainingJob", "name": "j", "controller": True}],
        }
    }
    t.handler("MODIFIED", pod, None)
    assert t.of("ns/j") == []
    t.handler("DELETED", pod, pod)
    assert t.of("ns/j") == [pod]
    now[0] = 11
    assert t.of("ns/j") == []


def test_an_expected_object_counts_as_there_until_it_is_seen_or_its_time_is_up() -> None:
    now = [0.0]
    e = cache.Expectations(ttl=300, clock=lambda: now[0])
    pod = {"metadata": {"name": "p", "namespace": "ns"}}
    assert e.expected("ns/p") is None
    e.created("ns/p")
    e.handler("ADDED", {"metadata": {"name": "q", "namespace": "ns"}}, None)
    assert e.expected("ns/p") is True
    now[0] = 200  # a loaded apiserver's watch lags
    assert e.expected("ns/p") is True
    e.handler("ADDED", pod, None)
    assert e.expected("ns/p") is None
    e.created("ns/p")
    e.handler("DELETED", pod, pod)  # gone before anything else was seen of it: make it again
    assert e.expected("ns/p") is None
    e.created("ns/p")
    now[0] = 501  # never heard of: the watch must have missed it
    assert e.expected("ns/p") is None


def test_a_deleted_object_counts_as_gone_until_it_is_seen_going_or_its_time_is_up() -> None:
    # A Service of a replica scaled away, wanted back before its watch says it went.
    now = [0.0]
    e = cache.Expectations(ttl=300, clock=lambda: now[0])
    svc = {"metadata": {"name": "s", "namespace": "ns"}}
    e.deleted("ns/s")
    e.handler("MODIFIED", svc, svc)  # the old object, still there
    assert e.expected("ns/s") is False
    e.handler("DELETED", svc, svc)
    assert e.expected("ns/s") is None
    e.deleted("ns/s")
    e.created("ns/s")  # made again: there, whatever the old one's events say
    assert e.expected("ns/s") is True
    e.deleted("ns/s")
    now[0] = 301
    assert e.expected("ns/s") is None
