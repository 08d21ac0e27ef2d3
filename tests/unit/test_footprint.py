"""A job is bounded by what it renders: one object larger than etcd stores, or a job whose
objects together pass the budget, is refused where it comes in, weighed from one pod per type."""

from __future__ import annotations

import pytest
from testkit.builders import a_job, container, template

from kubetrain.api import scheme, v1beta1
from kubetrain.operator import intake, render
from kubetrain.operator.frameworks import registry
from kubetrain.operator.policies import footprint


def tf_job(workers: int) -> v1beta1.TrainingJob:
    return a_job("big").framework("tensorflow").replicas("PS", 2).replicas("Worker", workers).build()


def test_a_tensorflow_job_whose_tf_config_grows_past_the_budget_is_refused_with_the_figure() -> None:
    with pytest.raises(intake.Unrunnable) as e:
        intake.decode(scheme.encode(tf_job(3000)), weigh=True)
    (error,) = e.value.errors
    assert error.path == ("spec", "replicaSpecs")
    assert f"over the {footprint.JOB_BYTES:,} one job may store" in error.message
    assert "its 3,000 Worker pods" in error.message
    assert "env TF_CONFIG is" in error.message
    # Without weighing (the converter, a job already stored), the same job decodes.
    assert intake.decode(scheme.encode(tf_job(3000))).job.spec.replica_specs["Worker"].replicas == 3000


def test_the_figure_is_what_the_whole_job_renders() -> None:
    job = tf_job(200)
    fw = registry.default().get("tensorflow")
    whole = sum(footprint.size(o) for o in render.render(job, fw))
    weighed = footprint.weight(job, render.representatives(job, fw))
    # Each type's last pod has its longest names: the estimate is a little above, never below.
    assert whole <= weighed <= whole * 1.01


def test_jobs_near_the_limits_are_admitted() -> None:
    intake.decode(scheme.encode(tf_job(1000)), weigh=True)  # 31.7 MB of TF_CONFIG
    pytorch = a_job("wide").framework("pytorch").replicas("Master", 1).replicas("Worker", 9999).build()
    intake.decode(scheme.encode(pytorch), weigh=True)  # the most replicas a type may have


def test_one_pod_larger_than_etcd_stores_is_refused_at_its_replica_type() -> None:
    # A template may have 512 KiB; TF_CONFIG naming 20,000 tasks adds about 700 KB more.
    env = [{"name": f"BLOB_{i}", "value": "x" * 60_000} for i in range(8)]
    fat = template(container("tensorflow", env=env))
    job = a_job("fat").framework("tensorflow").replicas("PS", 10000).replicas("Worker", 10000, tmpl=fat)
    with pytest.raises(intake.Unrunnable) as e:
        intake.decode(scheme.encode(job.build()), weigh=True)
    assert [x.path for x in e.value.errors] == [("spec", "replicaSpecs", "Worker")]
    message = e.value.errors[0].message
    assert message.startswith("its Pod fat-worker-9999 would be ")
    assert f"over the {footprint.OBJECT_BYTES:,} one object may have" in message


def test_the_representatives_are_the_last_pod_and_service_of_each_type() -> None:
    job = tf_job(5)
    objects = render.representatives(job, registry.default().get("tensorflow"))
    pods = sorted(o["metadata"]["name"] for o in objects if o["kind"] == "Pod")
    services = sorted(o["metadata"]["name"] for o in objects if o["kind"] == "Service")
    assert pods == services == ["big-ps-1", "big-worker-4"]


def test_only_jobs_that_might_not_fit_are_weighed() -> None:
    def job(workers: int) -> v1beta1.TrainingJob:
        return a_job("j").framework("pytorch").replicas("Master", 1).replicas("Worker", workers).build()

    assert not footprint.worth_weighing(job(footprint.SMALL_JOB - 1))
    assert footprint.worth_weighing(job(footprint.SMALL_JOB))
    # The largest job not weighed, every template as large as the API allows, is far from both bounds.
    env = [{"name": f"BLOB_{i}", "value": "x" * 60_000} for i in range(8)]
    fat = template(container("tensorflow", env=env))
    big = (
        a_job("fat")
        .framework("tensorflow")
        .replicas("PS", 1)
        .replicas("Worker", footprint.SMALL_JOB - 1, tmpl=fat)
    )
    built = big.build()
    representatives = render.representatives(built, registry.default().get("tensorflow"))
    assert footprint.weight(built, representatives) < footprint.JOB_BYTES / 2
    assert max(footprint.size(o) for o in representatives) < footprint.OBJECT_BYTES / 1.5
