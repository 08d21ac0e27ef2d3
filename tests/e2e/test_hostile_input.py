"""Nothing admitted that cannot run: hostile documents through the deployed webhooks.

The project's hostile-input generator (bench/kubetrain_bench/hostile/) makes documents of both
versions from the samples, and short jobs and runtimes from the short samples and the shipped
runtimes (with references that cannot resolve: TrainingRuntimes written first, loops, chains past
the limit); each is created through the real apiserver, on a cluster of its own with
``config/default`` deployed (the manager serving the conversion, validating and expanding
webhooks and the runtimes' webhook, as in test_deploy.py). Every document must be either refused
with the field named or accepted and then get all its pods and Services (a runtime: stored, and
the short job naming it refused with the field named, or run); nothing may answer 5xx, crash the
manager, or break a v1alpha1 list of the namespace. ``make bench-hostile`` runs the full 10,000
(bench/hostile_bench.py).
"""

from __future__ import annotations

import contextlib
import itertools

import pytest

from kubetrain_bench.deployment import deployment
from kubetrain_bench.hostile import generator, runner
from kubetrain_bench.hostile.report import (
    ACCEPTED,
    ACCEPTED_UNRUNNABLE,
    REJECTED_WITH_PATH,
    REJECTED_WITHOUT_PATH,
    SERVER_ERROR,
    Report,
    Result,
)

SEED = 7
COUNT = 400  # whole jobs of both versions
NEW = 150  # short jobs and runtimes
NAMESPACE = "hostile"


@pytest.fixture(scope="module")
def report(request: pytest.FixtureRequest) -> Report:
    with deployment(nodes=4) as d:
        d.namespace(NAMESPACE)
        docs = itertools.chain(
            generator.documents(SEED, COUNT, mix={"job": 1}, namespace=NAMESPACE),
            generator.documents(SEED, NEW, mix=generator.NEW, start=COUNT, namespace=NAMESPACE),
        )
        result = runner.run(d, NAMESPACE, docs, concurrency=8, timeout=30)
    # The figures are the point of this module: shown even when pytest captures output.
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print(
            f"\n\nhostile input, {COUNT} whole jobs and {NEW} short jobs and runtimes, seed {SEED}:\n"
            f"{result.format()}\n"
        )
    return result


def test_every_document_got_an_answer(report: Report) -> None:
    assert len(report.results) == COUNT + NEW
    for family in ("job", "short", "runtime"):
        counts = report.counts(r for r in report.results if r.family == family)
        assert counts[ACCEPTED] > 0, family
        assert counts[REJECTED_WITH_PATH] > 0, family


def test_nothing_answered_with_a_server_error(report: Report) -> None:
    bad = [r for r in report.results if r.outcome == SERVER_ERROR]
    assert not bad, _examples(bad)


def test_nothing_accepted_that_cannot_run(report: Report) -> None:
    bad = [r for r in report.results if r.outcome == ACCEPTED_UNRUNNABLE]
    assert not bad, _examples(bad)


def test_every_rejection_names_a_field(report: Report) -> None:
    bad = [r for r in report.results if r.outcome == REJECTED_WITHOUT_PATH]
    assert not bad, _examples(bad)


def test_the_manager_never_crashed(report: Report) -> None:
    assert report.manager_alive
    assert report.tracebacks == 0, report.traceback_lines


def test_a_v1alpha1_list_of_the_namespace_never_failed(report: Report) -> None:
    assert report.alpha_lists > 0
    assert not report.alpha_list_failed, report.alpha_list_failures[:3]


def _examples(results: list[Result]) -> str:
    lines = [f"{len(results)} documents, e.g.:"]
    lines += [f"#{r.index} {r.sample} [{r.label[:160]}]: {r.message[:300]}" for r in results[:8]]
    return "\n".join(lines)
