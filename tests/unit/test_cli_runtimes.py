"""The people who train see runtimes: ``kubetrain runtimes``, ``submit --runtime``, ``render
--runtimes``, and the client under them — everything that needs no cluster.

The short job the flags make is the one ``client.short_job`` writes, checked before any cluster
is looked for, each bad value named by its flag; it is sent as written (admission expands it).
The runtimes' table is made from the runtimes as stored; a runtime that builds on another is
shown merged with it. ``render`` expands a short job from the runtimes of ``--runtimes`` files,
every error in the terms of whoever wrote the field. What talks to the cluster — listing,
finding a runtime, creating the job — is seen here through a fake connection; the deployed
operator's end-to-end tests see the rest.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import pathlib
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from testkit import kube

from kubetrain import client
from kubetrain.api import v1beta1, validation
from kubetrain.cli import jobs, main, output, runtimes
from kubetrain.client import errors, loop
from kubetrain.client import jobs as client_jobs
from kubetrain.client import runtimes as client_runtimes
from kubetrain.operator import expansion

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUNTIMES = ROOT / "config" / "runtimes"
SHORT_SAMPLES = sorted((ROOT / "samples" / "v1beta1" / "short").glob("*.yaml"))
API = v1beta1.API_VERSION


def a_runtime(name: str, kind: str = "ClusterTrainingRuntime", **spec: Any) -> dict[str, Any]:
    """A PyTorch runtime whose Worker leaves the image and the command to the job."""
    body: dict[str, Any] = {
        "framework": {"name": "pytorch"},
        "replicaSpecs": {
            "Worker": {"replicas": 1, "template": {"spec": {"containers": [{"name": "pytorch"}]}}}
        },
    }
    return {"apiVersion": API, "kind": kind, "metadata": {"name": name}, "spec": {**body, **spec}}


def an_mpi_runtime(name: str = "mpi") -> dict[str, Any]:
    """The Launcher runs the job's command; the Workers run their own sshd, from the job's image."""
    sshd = {"name": "mpi", "command": ["/usr/sbin/sshd", "-De"]}
    return {
        "apiVersion": API,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name},
        "spec": {
            "framework": {"name": "mpi"},
            "replicaSpecs": {
                "Launcher": {"template": {"spec": {"containers": [{"name": "mpi"}]}}},
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [sshd]}}},
            },
        },
    }


SHORT_JOB = """\
apiVersion: training.kubetrain.dev/v1beta1
kind: TrainingJob
metadata: {name: short}
spec:
  runtimeRef: {name: tiny}
  trainer:
    image: example.com/train:1
    command: [torchrun, train.py]
    numNodes: 3
"""


def write(path: pathlib.Path, *docs: dict[str, Any] | str) -> pathlib.Path:
    path.write_text("---\n".join(d if isinstance(d, str) else yaml.safe_dump(d) for d in docs))
    return path


def parse(*argv: str) -> argparse.Namespace:
    return main.parser().parse_args(["submit", *argv])


# --- submit --runtime: the flags make the short job -----------------------------------------------


def test_the_flags_make_the_short_job_the_words_after_the_dashes_its_command() -> None:
    args = parse(
        "--runtime",
        "torch-distributed",
        "--image",
        "ghcr.io/me/train:1",
        "--nodes",
        "4",
        "--env",
        "EPOCHS=3",
        "--env",
        "URL=http://x/?a=b",
        "--procs-per-node",
        "gpu",
        "--gpus-per-node",
        "2",
        "--name",
        "mine",
        "-n",
        "team-a",
        "--",
        "torchrun",
        "train.py",
        "--lr=0.1",
        "--",
        "extra",
    )
    (body,) = jobs.bodies(args)
    assert body == {
        "apiVersion": API,
        "kind": "TrainingJob",
        "metadata": {"name": "mine", "namespace": "team-a"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {
                "image": "ghcr.io/me/train:1",
                "command": ["torchrun", "train.py", "--lr=0.1", "--", "extra"],
                "env": [{"name": "EPOCHS", "value": "3"}, {"name": "URL", "value": "http://x/?a=b"}],
                "numNodes": 4,
                "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}},
                "procsPerNode": "gpu",
            },
        },
    }


def test_without_a_name_the_job_is_named_after_its_runtime_and_a_namespaced_runtime_says_its_kind() -> None:
    (body,) = jobs.bodies(parse("--runtime", "ours", "--runtime-kind", "TrainingRuntime", "--generate-name"))
    assert re.fullmatch(r"ours-[a-z0-9]{5}", body["metadata"]["name"])
    assert body["spec"] == {"runtimeRef": {"kind": "TrainingRuntime", "name": "ours"}, "trainer": {}}
    (other,) = jobs.bodies(parse("--runtime", "ours", "--nodes", "0"))
    assert other["metadata"]["name"] != body["metadata"]["name"]
    assert other["spec"]["trainer"] == {"numNodes": 0}


@pytest.mark.parametrize(
    ("runtime", "prefix"),
    [("torch.gpu.v2", "torch-gpu-v2-"), ("7b-finetune", "job-7b-finetune-"), ("a" * 80, "a" * 30 + "-")],
)
def test_a_generated_name_is_a_dns_label_whatever_the_runtime_is_called(runtime: str, prefix: str) -> None:
    name = client_runtimes.generated_name(runtime)
    assert name.startswith(prefix)
    assert len(name) == len(prefix) + 5
    assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name)


def test_dry_run_prints_the_job_and_needs_no_cluster(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig, _ = kube.unreachable_kubeconfig(tmp_path)
    argv = ["submit", "--runtime", "tiny", "--image", "i:1", "--nodes", "2", "--name", "t", "--dry-run"]
    assert main.main([*argv, f"--kubeconfig={kubeconfig}", "--", "python", "t.py"]) == 0
    assert capsys.readouterr().out == (
        "apiVersion: training.kubetrain.dev/v1beta1\n"
        "kind: TrainingJob\n"
        "metadata:\n"
        "  name: t\n"
        "spec:\n"
        "  runtimeRef:\n"
        "    name: tiny\n"
        "  trainer:\n"
        "    image: i:1\n"
        "    command:\n"
        "    - python\n"
        "    - t.py\n"
        "    numNodes: 2\n"
    )


def test_without_dry_run_the_job_goes_to_the_cluster(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig, port = kube.unreachable_kubeconfig(tmp_path)
    argv = ["submit", "--runtime", "tiny", "--image", "i:1", f"--kubeconfig={kubeconfig}", "--", "python"]
    assert main.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot reach the cluster at https://127.0.0.1:{port}")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["--runtime", "tiny", "--name", "Big_Name"],
            "error: --name: metadata.name: 'Big_Name' must be a DNS-1035 label",
        ),
        (["--runtime", "Tiny"], "error: --runtime: spec.runtimeRef.name: 'Tiny' does not match"),
        (
            ["--runtime", "tiny", "--procs-per-node", "many"],
            "error: --procs-per-node: spec.trainer.procsPerNode",
        ),
        (
            ["--runtime", "tiny", "--nodes", "10001"],
            "error: --nodes: spec.trainer.numNodes: must be at most 10000",
        ),
        (
            ["--runtime", "tiny", "--env", "1X=2"],
            "error: --env: spec.trainer.env[0].name: '1X' does not match",
        ),
    ],
)
def test_a_bad_value_is_named_by_its_flag_before_a_cluster_is_looked_for(
    argv: list[str], said: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig, _ = kube.unreachable_kubeconfig(tmp_path)
    assert main.main(["submit", *argv, f"--kubeconfig={kubeconfig}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(said), err
    assert len(err.splitlines()) == 1
    assert "reach" not in err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--image", "i"], "error: --image: only for a job made from a runtime: give --runtime NAME"),
        (["job.yaml", "--nodes", "2"], "error: --nodes: only for a job made from a runtime"),
        (["a.yaml", "b.yaml"], "error: give one FILE, or --runtime NAME and the job's command after --"),
        ([], "error: give one FILE"),
        (["--runtime", "t", "--env", "NOVALUE"], "error: argument --env: expected NAME=VALUE, got 'NOVALUE'"),
        (["--runtime", "t", "--nodes", "-1"], "error: argument --nodes: expected a number of nodes"),
        (
            ["--runtime", "t", "--gpus-per-node", "0"],
            "error: argument --gpus-per-node: expected a number, 1 or",
        ),
        (
            ["--runtime", "t", "--name", "a", "--generate-name"],
            "error: argument --generate-name: not allowed",
        ),
        (["--runtime", "t", "--dry-run", "--wait"], "error: --dry-run creates nothing to --wait for"),
    ],
)
def test_a_command_line_that_mixes_the_two_forms_is_a_usage_error(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main.main(["submit", *argv]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(said), err
    assert err[1] == "See 'kubetrain submit --help'."


def test_submit_dry_run_of_a_file_prints_what_it_would_create(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = write(tmp_path / "short.yaml", SHORT_JOB)
    assert main.main(["submit", str(job), "--dry-run"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == yaml.safe_load(SHORT_JOB)


# --- the client: a short job checked as far as it can be, and sent as written ---------------------


def test_a_short_job_is_checked_for_what_it_says_itself_and_left_whole_for_admission() -> None:
    job = yaml.safe_load(SHORT_JOB)
    job["spec"]["runPolicy"] = {"backoffLimit": 1}  # the runtime's, overridden: admission judges it
    assert client_jobs.is_short(job)
    assert client_jobs.hub_body(job) == job
    bad = copy.deepcopy(job)
    bad["metadata"] = {}
    bad["spec"]["runtimeRef"]["kind"] = "Runtime"
    bad["spec"]["trainer"]["numNodes"] = "three"
    with pytest.raises(validation.ValidationError) as e:
        client_jobs.hub_body(bad)
    assert [validation.format_path(f.path) for f in e.value.errors] == [
        "metadata.name",
        "spec.runtimeRef.kind",
        "spec.trainer.numNodes",
    ]
    # Only v1beta1 has runtimeRef: a v1alpha1 job that says one is decoded, and refused, as such.
    alpha = {**job, "apiVersion": "training.kubetrain.dev/v1alpha1"}
    assert not client_jobs.is_short(alpha)
    with pytest.raises(validation.ValidationError):
        client_jobs.hub_body(alpha)


def test_a_short_file_is_told_its_mistakes_by_line_without_a_cluster(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig, _ = kube.unreachable_kubeconfig(tmp_path)
    bad = write(tmp_path / "bad.yaml", SHORT_JOB.replace("numNodes: 3", "numNodes: -3"))
    assert main.main(["submit", str(bad), f"--kubeconfig={kubeconfig}"]) == 1
    assert capsys.readouterr().err == (
        f"error: {bad}:9:5: spec.trainer.numNodes: must be at least 0, got -3\n"
    )


class FakeConnection:
    """What the client's verbs ask of a connection: requests answered from a table, each recorded."""

    def __init__(self, answers: dict[tuple[str, str | None, str | None], Any]) -> None:
        self.answers, self.asked = answers, []  # type: ignore[var-annotated]
        self.namespace, self.server = "default", "https://cluster.test"

    async def request(
        self, method: str, kind: Any, namespace: str | None, name: str | None = None, **kw: Any
    ) -> Any:
        self.asked.append((method, kind.plural, namespace, name, kw.get("body"), kw.get("params")))
        answer = self.answers.get((kind.plural, namespace, name))
        if isinstance(answer, Exception):
            raise answer
        if answer is None and name is not None:
            raise errors.NotFound(kind.name, name, namespace)
        return answer


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_short_job_is_posted_as_written_and_what_admission_stored_comes_back() -> None:
    short = client.short_job(
        "tiny", image="i:1", command=["python", "t.py"], nodes=2, name="t", namespace="ml"
    )
    stored = expansion.expand(
        {**short, "metadata": {"name": "t", "namespace": "ml"}}, _files(a_runtime("tiny"))
    ).obj
    fake = FakeConnection({("trainingjobs", "ml", None): stored})
    created = run(client_jobs.create(fake, short, None))  # type: ignore[arg-type]
    ((method, plural, namespace, _, body, _),) = fake.asked
    assert (method, plural, namespace) == ("POST", "trainingjobs", "ml")
    assert body == {**short, "metadata": {"name": "t"}}
    assert created.spec.runtime_ref == v1beta1.RuntimeRef(name="tiny")
    assert created.spec.replica_specs["Worker"].replicas == 2


def test_the_clients_submit_creates_the_short_job_and_its_runtimes_are_typed() -> None:
    tiny = a_runtime("tiny")
    stored = expansion.expand(
        {**client.short_job("tiny", image="i:1", nodes=3, name="t"), "metadata": {"name": "t"}}, _files(tiny)
    ).obj
    fake = FakeConnection(
        {
            ("trainingjobs", "default", None): stored,
            ("clustertrainingruntimes", None, None): {"items": [tiny]},
            ("clustertrainingruntimes", None, "tiny"): tiny,
            ("trainingruntimes", "default", None): {"items": []},
        }
    )
    runner = loop.Loop()
    c = client.Client(fake, runner)  # type: ignore[arg-type]
    try:
        job = c.submit("tiny", image="i:1", command=["python", "t.py"], nodes=3, env={"A": "1"}, name="t")
        assert job.spec.replica_specs["Worker"].replicas == 3
        posted = fake.asked[-1][4]
        assert posted["spec"]["trainer"] == {
            "image": "i:1",
            "command": ["python", "t.py"],
            "env": [{"name": "A", "value": "1"}],
            "numNodes": 3,
        }
        (runtime,) = c.runtimes()
        assert isinstance(runtime, v1beta1.ClusterTrainingRuntime)
        assert c.runtime("tiny") == runtime
        with pytest.raises(client.NotFound, match="ClusterTrainingRuntime 'gone' not found"):
            c.runtime("gone")
        with pytest.raises(client.InvalidInput, match=r"spec\.trainer\.numNodes: must be at least 0"):
            c.submit("tiny", nodes=-1)
    finally:
        runner.close()


def _files(*docs: dict[str, Any]) -> expansion.Resolve:
    return expansion.from_documents(docs)


# --- the client: the runtimes installed -----------------------------------------------------------


def test_the_runtimes_are_listed_cluster_wide_first_then_the_namespaces_by_name() -> None:
    ours = a_runtime("ours", "TrainingRuntime")
    ours["metadata"]["namespace"] = "team-a"
    listed = {
        ("clustertrainingruntimes", None, None): {
            # A list's items may come without apiVersion and kind.
            "items": [{"metadata": {"name": "b"}, "spec": {}}, {"metadata": {"name": "a"}, "spec": {}}]
        },
        ("trainingruntimes", "team-a", None): {"items": [ours]},
    }
    fake = FakeConnection(listed)
    found = run(client_runtimes.list_objects(fake, "team-a"))  # type: ignore[arg-type]
    assert [(o["kind"], o["metadata"]["name"]) for o in found] == [
        ("ClusterTrainingRuntime", "a"),
        ("ClusterTrainingRuntime", "b"),
        ("TrainingRuntime", "ours"),
    ]
    assert all(o["apiVersion"] == API for o in found)
    assert client_runtimes.decode(ours).spec.framework == v1beta1.FrameworkSpec(name="pytorch")


def test_a_cluster_without_the_runtime_kinds_or_a_user_who_may_not_list_them_is_one_line() -> None:
    missing = errors.Rejected("the server could not find the requested resource", 404)
    fake = FakeConnection({("clustertrainingruntimes", None, None): missing})
    with pytest.raises(errors.Rejected) as e:
        run(client_runtimes.list_objects(fake, None))  # type: ignore[arg-type]
    assert str(e.value) == (
        "the cluster at https://cluster.test has no ClusterTrainingRuntime kind "
        "(training.kubetrain.dev/v1beta1): kubetrain's runtime CRDs are not installed there"
    )
    forbidden = errors.Rejected(
        'trainingruntimes.training.kubetrain.dev is forbidden: User "ann" cannot list resource "trainingruntimes"',
        403,
    )
    fake = FakeConnection(
        {
            ("clustertrainingruntimes", None, None): {"items": []},
            ("trainingruntimes", "default", None): forbidden,
        }
    )
    with pytest.raises(errors.Rejected) as e:
        run(client_runtimes.list_objects(fake, None))  # type: ignore[arg-type]
    assert str(e.value) == (
        "cannot list TrainingRuntimes in namespace 'default': trainingruntimes.training.kubetrain.dev is "
        'forbidden: User "ann" cannot list resource "trainingruntimes"'
    )


def test_a_runtime_found_or_not_and_a_kind_not_served_said_as_such() -> None:
    tiny = a_runtime("tiny")
    fake = FakeConnection(
        {
            ("clustertrainingruntimes", None, "tiny"): tiny,
            ("clustertrainingruntimes", None, None): {"items": []},
        }
    )
    assert run(client_runtimes.find(fake, v1beta1.RuntimeKind.CLUSTER, "tiny", "ml")) == tiny  # type: ignore[arg-type]
    assert run(client_runtimes.find(fake, v1beta1.RuntimeKind.CLUSTER, "nope", "ml")) is None  # type: ignore[arg-type]
    # A TrainingRuntime is the job's namespace's, else the client's.
    fake = FakeConnection({("trainingruntimes", None, None): errors.Rejected("not found", 404)})
    fake.answers[("trainingruntimes", "default", None)] = errors.Rejected("not found", 404)
    with pytest.raises(errors.Rejected, match="has no TrainingRuntime kind"):
        run(client_runtimes.find(fake, v1beta1.RuntimeKind.NAMESPACED, "ours", None))  # type: ignore[arg-type]
    assert fake.asked[0][1:4] == ("trainingruntimes", "default", "ours")


# --- kubetrain runtimes -----------------------------------------------------------------------------


def installed() -> list[dict[str, Any]]:
    gpu = {
        "apiVersion": API,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "tiny-gpu"},
        "spec": {"runtimeRef": {"name": "tiny"}, "replicaSpecs": {"Worker": {"replicas": 2}}},
    }
    broken = {**gpu, "metadata": {"name": "orphan"}, "spec": {"runtimeRef": {"name": "gone"}}}
    ours = a_runtime("ours", "TrainingRuntime")
    ours["metadata"]["namespace"] = "team-a"
    ours["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = "team-a/torch:2"
    return [an_mpi_runtime(), broken, a_runtime("tiny"), gpu, ours]


def test_the_table_says_each_runtimes_replicas_node_type_and_what_a_job_must_give() -> None:
    headers, table, problems = runtimes.rows(installed(), namespace="team-a")
    assert output.table(headers, table) == (
        "NAME       KIND                     FRAMEWORK   REPLICAS              NODE TYPE   JOB GIVES\n"
        "mpi        ClusterTrainingRuntime   mpi         Launcher=1 Worker=2   Worker      image, command\n"
        "orphan     ClusterTrainingRuntime   ?           ?                     ?           ?\n"
        "tiny       ClusterTrainingRuntime   pytorch     Worker=1              Worker      image, command\n"
        "tiny-gpu   ClusterTrainingRuntime   pytorch     Worker=2              Worker      image, command\n"
        "ours       TrainingRuntime          pytorch     Worker=1              Worker      command\n"
    )
    assert problems == [
        'ClusterTrainingRuntime orphan: ClusterTrainingRuntime "gone" not found '
        "(the runtime ClusterTrainingRuntime orphan builds on)"
    ]


@contextlib.contextmanager
def a_cluster_holding(monkeypatch: pytest.MonkeyPatch, objects: list[dict[str, Any]]) -> Iterator[list[Any]]:
    """``kubetrain runtimes`` connected to a cluster that lists ``objects``; the namespaces asked."""
    asked: list[Any] = []

    class Client:
        namespace = "default"

        def runtime_objects(self, *, namespace: str | None = None) -> list[dict[str, Any]]:
            asked.append(namespace)
            return copy.deepcopy(objects)

        def __enter__(self) -> Client:
            return self

        def __exit__(self, *_: object) -> None:
            pass

    monkeypatch.setattr(runtimes.cluster, "connect", lambda _args: Client())
    yield asked


def test_kubetrain_runtimes_prints_the_table_names_or_objects(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with a_cluster_holding(monkeypatch, installed()) as asked:
        assert main.main(["runtimes", "-n", "team-a"]) == 0
        out, err = capsys.readouterr()
        assert out.splitlines()[0].split() == [
            "NAME",
            "KIND",
            "FRAMEWORK",
            "REPLICAS",
            "NODE",
            "TYPE",
            "JOB",
            "GIVES",
        ]
        assert len(out.splitlines()) == 6
        assert err == (
            'warning: ClusterTrainingRuntime orphan: ClusterTrainingRuntime "gone" not found '
            "(the runtime ClusterTrainingRuntime orphan builds on)\n"
        )
        assert asked == ["team-a"]
        assert main.main(["runtimes", "-o", "name"]) == 0
        assert capsys.readouterr().out.splitlines() == [
            "clustertrainingruntime.training.kubetrain.dev/mpi",
            "clustertrainingruntime.training.kubetrain.dev/orphan",
            "clustertrainingruntime.training.kubetrain.dev/tiny",
            "clustertrainingruntime.training.kubetrain.dev/tiny-gpu",
            "trainingruntime.training.kubetrain.dev/ours",
        ]
        assert main.main(["runtimes", "tiny", "-o", "yaml"]) == 0
        assert yaml.safe_load(capsys.readouterr().out) == a_runtime("tiny")
        assert main.main(["runtimes", "tiny", "mpi", "-o", "json"]) == 0
        assert [o["metadata"]["name"] for o in yaml.safe_load(capsys.readouterr().out)["items"]] == [
            "mpi",
            "tiny",
        ]
        assert main.main(["runtimes", "tiny", "nope"]) == 1
        out, err = capsys.readouterr()
        assert out.splitlines()[1].startswith("tiny ")
        assert err == (
            "error: no runtime 'nope' among the ClusterTrainingRuntimes or TrainingRuntimes of namespace 'default'\n"
        )
    with a_cluster_holding(monkeypatch, []):
        assert main.main(["runtimes"]) == 0
        assert capsys.readouterr() == (
            "",
            "No runtimes found: no ClusterTrainingRuntimes, and no TrainingRuntimes in namespace 'default'.\n",
        )


def test_kubetrain_runtimes_without_a_cluster_is_one_line(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig, port = kube.unreachable_kubeconfig(tmp_path)
    assert main.main(["runtimes", f"--kubeconfig={kubeconfig}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot reach the cluster at https://127.0.0.1:{port}")
    assert len(err.splitlines()) == 1


# --- kubetrain render --runtimes --------------------------------------------------------------------


def render(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]], str]:
    code = main.main(["render", *argv])
    out, err = capsys.readouterr()
    return code, [d for d in yaml.safe_load_all(out) if d] if code == 0 else [], err


def test_render_expands_a_short_job_from_the_runtimes_given(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = write(tmp_path / "job.yaml", SHORT_JOB)
    runtime = write(tmp_path / "tiny.yaml", a_runtime("tiny"), a_runtime("other"))
    code, objects, err = render(capsys, str(job), "--runtimes", str(runtime))
    assert code == 0, err
    pods = [o for o in objects if o["kind"] == "Pod"]
    assert [p["metadata"]["name"] for p in pods] == ["short-worker-0", "short-worker-1", "short-worker-2"]
    (main_container,) = pods[0]["spec"]["containers"]
    assert (main_container["image"], main_container["command"]) == (
        "example.com/train:1",
        ["torchrun", "train.py"],
    )
    # A directory of runtimes, among other files, does as well; so does a job written whole beside it.
    folder = tmp_path / "runtimes"
    folder.mkdir()
    write(folder / "tiny.yaml", a_runtime("tiny"))
    write(folder / "kustomization.yaml", {"resources": ["tiny.yaml"]})
    whole = (ROOT / "samples" / "v1beta1" / "pytorch-ddp.yaml").read_text()
    both = write(tmp_path / "both.yaml", SHORT_JOB, whole)
    code, again, err = render(capsys, str(both), "--runtimes", str(folder))
    assert code == 0, err
    assert again[: len(objects)] == objects
    assert len(again) > len(objects)


def test_render_says_each_error_of_a_short_job_where_its_writer_wrote_it(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runtimes_file = write(tmp_path / "rt.yaml", a_runtime("tiny"))
    missing = write(tmp_path / "missing.yaml", SHORT_JOB.replace("name: tiny", "name: huge"))
    assert render(capsys, str(missing), "--runtimes", str(runtimes_file))[2] == (
        f'error: {missing}:5:3: spec.runtimeRef: ClusterTrainingRuntime "huge" not found\n'
    )
    # The job's own field, after the runtime's was merged under it.
    own = write(tmp_path / "own.yaml", SHORT_JOB + "  runPolicy: {backoffLimit: -1}\n")
    assert render(capsys, str(own), "--runtimes", str(runtimes_file))[2] == (
        f"error: {own}:10:15: spec.runPolicy.backoffLimit: must be at least 0, got -1\n"
    )
    # The runtime's field: said at the job's runtimeRef, in the runtime's terms.
    launcher = {"template": {"spec": {"containers": [{"name": "pytorch", "image": "x"}]}}}
    wrong = a_runtime("tiny")
    wrong["spec"]["replicaSpecs"]["Launcher"] = launcher
    job = write(tmp_path / "job.yaml", SHORT_JOB)
    assert render(capsys, str(job), "--runtimes", str(write(tmp_path / "wrong.yaml", wrong)))[2] == (
        f"error: {job}:5:3: spec.runtimeRef: ClusterTrainingRuntime tiny: spec.replicaSpecs.Launcher: "
        "pytorch has no replica type Launcher (allowed: Master, Worker)\n"
    )
    nothing = write(
        tmp_path / "nothing.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    )
    assert render(capsys, str(job), "--runtimes", str(nothing))[2] == (
        f"error: --runtimes {nothing}: no ClusterTrainingRuntime or TrainingRuntime in it\n"
    )


def test_render_without_runtimes_or_a_cluster_says_how_to_give_them(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = write(tmp_path / "job.yaml", SHORT_JOB)
    kubeconfig, port = kube.unreachable_kubeconfig(tmp_path)
    code, _, err = render(capsys, str(job), f"--kubeconfig={kubeconfig}")
    assert code == 1
    assert err == (
        f"error: {job}:5:3: spec.runtimeRef: give its runtime with --runtimes FILE or DIR (kubetrain's are "
        f"in config/runtimes), or a cluster that has it: cannot reach the cluster at https://127.0.0.1:{port}: "
        "connection refused (is it running? `kubetrain dev up` starts one here)\n"
    )
    # A job written whole needs neither.
    whole = str(ROOT / "samples" / "v1beta1" / "pytorch-ddp.yaml")
    assert render(capsys, whole, f"--kubeconfig={kubeconfig}")[0] == 0


@pytest.mark.skipif(not SHORT_SAMPLES, reason="no short samples yet")
@pytest.mark.parametrize("sample", SHORT_SAMPLES, ids=lambda p: p.stem)
def test_every_short_sample_renders_against_the_shipped_runtimes(
    sample: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, objects, err = render(capsys, str(sample), "--runtimes", str(RUNTIMES))
    assert code == 0, err
    trainer = yaml.safe_load(sample.read_text())["spec"]["trainer"]
    images = {c.get("image") for o in objects if o["kind"] == "Pod" for c in o["spec"]["containers"]}
    assert trainer["image"] in images
    for field in ("command", "args"):
        given = [c.get(field) for o in objects if o["kind"] == "Pod" for c in o["spec"]["containers"]]
        assert field not in trainer or trainer[field] in given
