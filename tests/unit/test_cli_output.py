"""What `kubetrain get`/`list` print: kubectl's tables and ages, the objects as YAML or JSON."""

from __future__ import annotations

import datetime
import io
import json

import attrs
import pytest
import yaml
from testkit.builders import a_job
from testkit.statuses import NOW, ago, cond, with_status

from kubetrain.api import v1beta1
from kubetrain.cli import jobs, output

C = v1beta1.ConditionType


def running_job() -> v1beta1.TrainingJob:
    job = a_job("pt").framework("pytorch").replicas("Master", 1).replicas("Worker", 3).build()
    return with_status(
        job,
        conditions=(cond(C.CREATED, True, "TrainingJobCreated"), cond(C.RUNNING, True, "Running")),
        replica_statuses={
            "Master": v1beta1.ReplicaStatus(active=1, ready=1),
            "Worker": v1beta1.ReplicaStatus(active=3, ready=2),
        },
        restarts=v1beta1.RestartCounts(user_code=1, infrastructure=2),
    )


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (192, "3m12s"),
        (600, "10m"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600, "3h"),
        (5 * 3600 + 60 * 7, "5h7m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 3600 * 4, "3d4h"),
        (20 * 86400, "20d"),
        (800 * 86400, "2y70d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_ages_read_as_kubectl_prints_them(seconds: int, shown: str) -> None:
    assert output.age(ago(seconds), NOW) == shown


def test_an_age_in_the_future_by_clock_skew_is_zero_and_unknown_times_say_so() -> None:
    assert output.age(NOW + datetime.timedelta(seconds=1), NOW) == "0s"
    assert output.age(NOW + datetime.timedelta(seconds=30), NOW) == "<invalid>"
    assert output.age(None, NOW) == "<unknown>"


def test_a_table_aligns_its_columns_under_upper_case_headers() -> None:
    text = output.table(("name", "state", "age"), [("a", "Running", "5s"), ("longer-name", "Failed", "2m")])
    assert text == ("NAME          STATE     AGE\na             Running   5s\nlonger-name   Failed    2m\n")


def test_the_jobs_table_counts_ready_of_wanted_and_every_restart() -> None:
    headers, rows = jobs.rows([running_job()], NOW)
    assert output.table(headers, rows) == (
        "NAME   FRAMEWORK   STATE     REPLICAS   RESTARTS   AGE\n"
        "pt     pytorch     Running   3/4        3          5m\n"
    )


def test_with_all_namespaces_the_namespace_comes_first() -> None:
    headers, rows = jobs.rows([running_job()], NOW, with_namespace=True)
    assert headers[0] == "namespace"
    assert rows[0][:2] == ("default", "pt")


def test_a_finished_job_shows_how_many_replicas_succeeded() -> None:
    job = a_job("tf").framework("tensorflow").replicas("Chief", 1).replicas("Worker", 2).build()
    done = with_status(
        job,
        conditions=(cond(C.CREATED, True, "TrainingJobCreated"), cond(C.SUCCEEDED, True, "SuccessPolicyMet")),
        replica_statuses={"Chief": v1beta1.ReplicaStatus(succeeded=1)},
    )
    assert jobs.state_cell(done) == "Succeeded"
    assert jobs.replicas_cell(done) == "1/3 succeeded"


def test_a_job_whose_pods_wait_says_why_in_its_state() -> None:
    job = a_job("q").replicas("Worker", 2).build()
    queued = with_status(
        job,
        conditions=(
            cond(C.CREATED, True, "TrainingJobCreated"),
            cond(C.SCHEDULED, False, "Queued", "queued in team-a: 2 of 2 pods wait for admission"),
        ),
    )
    assert jobs.state_cell(queued) == "Created (Queued)"
    refused = with_status(
        job,
        conditions=(
            cond(C.CREATED, True, "TrainingJobCreated"),
            cond(C.REPLICA_FAILURE, True, "QuotaExceeded"),
        ),
    )
    assert jobs.state_cell(refused) == "Created (QuotaExceeded)"
    assert jobs.state_cell(a_job("new").replicas("Worker", 1).build()) == "Pending"


def test_json_prints_one_object_and_a_list_for_several() -> None:
    job = running_job()
    out = io.StringIO()
    output.dump([job], "json", out, single=True)
    data = json.loads(out.getvalue())
    assert (data["kind"], data["metadata"]["name"], data["status"]["state"]) == (
        "TrainingJob",
        "pt",
        "Running",
    )
    out = io.StringIO()
    output.dump([job, job], "json", out, single=False)
    assert [i["metadata"]["name"] for i in json.loads(out.getvalue())["items"]] == ["pt", "pt"]


def test_yaml_is_the_v1beta1_object_without_managed_fields() -> None:
    job = running_job()
    job = attrs.evolve(job, metadata=attrs.evolve(job.metadata, managed_fields=({"manager": "kubectl"},)))
    out = io.StringIO()
    output.dump([job], "yaml", out, single=True)
    data = yaml.safe_load(out.getvalue())
    assert data["apiVersion"] == "training.kubetrain.dev/v1beta1"
    assert data["spec"]["replicaSpecs"]["Worker"]["replicas"] == 3
    assert "managedFields" not in data["metadata"]


def test_name_output_is_the_resource_as_kubectl_names_it() -> None:
    out = io.StringIO()
    output.dump([running_job()], "name", out, single=True)
    assert out.getvalue() == "trainingjob.training.kubetrain.dev/pt\n"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_and_never_with_no_color() -> None:
    assert output.palette(Tty(), {}).enabled
    assert not output.palette(io.StringIO(), {}).enabled
    assert not output.palette(Tty(), {"NO_COLOR": "1"}).enabled
    # NO_COLOR set but empty does not count (no-color.org).
    assert output.palette(Tty(), {"NO_COLOR": ""}).enabled
    assert output.Palette(False).nth(3, "x") == "x"
    assert output.Palette(True).nth(0, "x") == "\033[36mx\033[0m"
