"""Refused creates: what kind of refusal it is, and where in the job a refused field comes from."""

from __future__ import annotations

import pytest
from testkit.builders import a_job

from kubetrain.operator.frameworks import registry
from kubetrain.operator.policies import refusal
from kubetrain.operator.webhooks import dryrun

K = refusal.Kind


@pytest.mark.parametrize(
    ("status", "message", "kind", "reason"),
    [
        (422, 'Pod "j-worker-0" is invalid: spec.containers[0].image: Required value', K.INVALID, "Invalid"),
        (400, 'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal', K.INVALID, "Invalid"),
        (403, 'pods "j" is forbidden: exceeded quota: q, requested: pods=1', K.WAITING, "QuotaExceeded"),
        (
            403,
            'pods "j" is forbidden: error looking up service account ns/sa: serviceaccount "sa" not found',
            K.WAITING,
            "ServiceAccountMissing",
        ),
        (
            403,
            'pods "j" is forbidden: violates PodSecurity "restricted:latest": ...',
            K.FORBIDDEN,
            "PodSecurity",
        ),
        (403, 'admission webhook "deny.example.com" denied the request: no', K.FORBIDDEN, "Forbidden"),
        (
            500,
            'Internal error occurred: failed calling webhook "x": connection refused',
            K.WAITING,
            "WebhookUnavailable",
        ),
        (
            403,
            "unable to create new content in namespace ns because it is being terminated",
            K.WAITING,
            "NamespaceTerminating",
        ),
        (404, 'namespaces "gone" not found', K.WAITING, "NamespaceNotFound"),
        (429, "too many requests", K.WAITING, "Unavailable"),
        (504, "timeout", K.WAITING, "Unavailable"),
    ],
)
def test_refusals_are_classified_by_status_and_message(
    status: int, message: str, kind: refusal.Kind, reason: str
) -> None:
    r = refusal.classify(status, message)
    assert (r.kind, r.reason) == (kind, reason)
    assert r.permanent == (kind is not K.WAITING)


@pytest.mark.parametrize(
    ("verdict", "kind", "reason"),
    [
        (refusal.NAME_TAKEN_REASON, K.TAKEN, "NameTaken"),
        (refusal.NAME_HELD_REASON, K.WAITING, "NameHeld"),
        (refusal.NOT_SERVED_REASON, K.UNSERVED, "GangSchedulerNotServed"),
    ],
)
def test_the_operators_own_verdicts_are_values_whatever_the_message_says(
    verdict: str, kind: refusal.Kind, reason: str
) -> None:
    for status, message in ((409, "anything at all"), (404, 'namespaces "x" not found'), (422, "invalid")):
        r = refusal.classify(status, message, verdict)
        assert (r.kind, r.reason) == (kind, reason)
    # The same words in a message without the verdict are the apiserver's, classified as such.
    assert refusal.classify(409, f"{refusal.NAME_TAKEN} x").kind is K.WAITING


def test_backoff_doubles_from_one_second_to_a_minute() -> None:
    assert [refusal.backoff(t) for t in (-1, 0, 0.5, 1, 2, 4, 30, 59, 61, 3600)] == [
        1,
        1,
        1,
        1,
        2,
        4,
        30,
        59,
        60,
        60,
    ]


JOB = a_job("j").framework("pytorch").replicas("Master", 1).replicas("Worker", 3).build()


def rendered(kind: str, name: str) -> dict[str, object]:
    objects = dryrun.samples(JOB, registry.default().get("pytorch"))
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)  # type: ignore[index]


def test_one_pod_and_service_per_replica_type_stand_for_all_with_the_longest_names() -> None:
    objects = dryrun.samples(JOB, registry.default().get("pytorch"))
    assert sorted((o["kind"], o["metadata"]["name"]) for o in objects) == [
        ("Pod", "j-master-0"),
        ("Pod", "j-worker-2"),
        ("PodTemplate", "j-master-0"),
        ("PodTemplate", "j-worker-2"),
        ("Service", "j-master-0"),
        ("Service", "j-worker-2"),
    ]


@pytest.mark.parametrize(
    ("kind", "name", "field", "path"),
    [
        (
            "Pod",
            "j-worker-2",
            "spec.containers[0].image",
            ("spec", "replicaSpecs", "Worker", "template", "spec", "containers", 0, "image"),
        ),
        (
            "Pod",
            "j-worker-2",
            "metadata.labels[bad key]",
            ("spec", "replicaSpecs", "Worker", "template", "metadata", "labels", "bad key"),
        ),
        ("Pod", "j-master-0", "metadata.name", ("metadata", "name")),
        ("Service", "j-worker-2", "spec.ports[0].name", ("spec", "replicaSpecs", "Worker")),
        ("Service", "j-worker-2", "metadata.name", ("metadata", "name")),
        ("Pod", "j-master-0", "", ("spec", "replicaSpecs", "Master", "template")),
        (
            "PodTemplate",
            "j-worker-2",
            "template.spec.containers[0].name",
            ("spec", "replicaSpecs", "Worker", "template", "spec", "containers", 0, "name"),
        ),
    ],
)
def test_a_refused_field_is_named_in_the_jobs_terms(
    kind: str, name: str, field: str, path: tuple[object, ...]
) -> None:
    assert dryrun.job_path(JOB, rendered(kind, name), field) == path
