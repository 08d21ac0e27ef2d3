"""Generated TfJob, MXJob, Caffe2Job and ChainerJob documents convert into jobs that run alike.

For every document the strategies of ``testkit.seed_kinds`` draw — every spelling the old
documentation used, defaults left out or spelled out, random replica counts, ports and
templates — ``kubetrain convert`` must:

- give a TrainingJob the cluster admits (``document.convert`` runs admission's checks);
- render one pod per replica the old operator ran, named ``{job}-{type}-{index}``, whose main
  container is the old one: its image, command, args and the user's own env;
- give each pod the variables the old operator set, with the values its documentation
  names (TF_CONFIG's cluster and task, DMLC_*, SHARD_ID/NUM_SHARDS/RUN_ID/CAFFE2_CONFIG, the
  MPI hostfile with the master first) — computed here from the old contract, not from
  kubetrain's frameworks;
- write back (``--to``) exactly the document in one spelling with the old defaults filled in.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from testkit import seed_kinds

from kubetrain.api import v1beta1
from kubetrain.convert import chainerjob, document


def converted(case: seed_kinds.Case) -> tuple[v1beta1.TrainingJob, dict[str, dict[str, Any]]]:
    job = document.convert(case.spelled).job
    return job, seed_kinds.pods(job)


def pod_of(
    case: seed_kinds.Case, pods: dict[str, Any], host: seed_kinds.Host, kind_type: str
) -> dict[str, Any]:
    name = f"{case.canonical['metadata']['name']}-{kind_type.lower()}-{host.index}"
    assert name in pods, f"no pod {name} for {host.type}[{host.index}] in {sorted(pods)}"
    pod: dict[str, Any] = pods[name]
    return pod


def assert_same_container(pod: dict[str, Any], host: seed_kinds.Host) -> None:
    main = seed_kinds.main_container(pod)
    assert main["name"] == host.container["name"]
    for key in ("image", "command", "args", "resources"):
        assert main.get(key) == host.container.get(key), key
    for e in host.container.get("env", []):
        assert e in main["env"]


def assert_one_pod_per_replica(case: seed_kinds.Case, pods: dict[str, Any]) -> None:
    assert len([p for p in pods if p != "<files>"]) == len(case.hosts)


def assert_round_trip(case: seed_kinds.Case, job: v1beta1.TrainingJob) -> None:
    back = document.back(job, case.api_version, case.kind)
    assert json.loads(json.dumps(back)) == case.canonical


# --- TfJob --------------------------------------------------------------------------------


@given(seed_kinds.tf_jobs())
def test_tfjob_runs_its_replicas_with_tf_config_and_comes_back(case: seed_kinds.Case) -> None:
    job, pods = converted(case)
    assert_one_pod_per_replica(case, pods)
    counts = {t: len(case.of_type(t)) for t in ("MASTER", "WORKER", "PS")}
    # The one documented change: TF_CONFIG names the MASTER's task chief.
    task = {"MASTER": "chief", "WORKER": "worker", "PS": "ps"}
    for host in case.hosts:
        pod = pod_of(case, pods, host, host.type)
        assert_same_container(pod, host)
        config = json.loads(seed_kinds.env(pod)["TF_CONFIG"])
        assert config["task"] == {"type": task[host.type], "index": host.index}
        assert config["environment"] == "cloud"
        assert {k: len(v) for k, v in config["cluster"].items()} == {
            task[t]: n for t, n in counts.items() if n
        }
        for old, n in counts.items():
            ports = {int(a.rsplit(":", 1)[1]) for a in config["cluster"].get(task[old], [])}
            assert ports == {h.port for h in case.of_type(old)} if n else not ports
        assert len({a for addresses in config["cluster"].values() for a in addresses}) == len(case.hosts)
    assert_round_trip(case, job)


# --- MXJob --------------------------------------------------------------------------------


@given(seed_kinds.mx_jobs())
def test_mxjob_runs_its_replicas_with_dmlc_variables_and_comes_back(case: seed_kinds.Case) -> None:
    job, pods = converted(case)
    assert_one_pod_per_replica(case, pods)
    schedulers = case.of_type("SCHEDULER")
    for host in case.hosts:
        pod = pod_of(case, pods, host, host.type)
        assert_same_container(pod, host)
        env = seed_kinds.env(pod)
        assert env["DMLC_ROLE"] == host.type.lower()
        assert env["DMLC_NUM_SERVER"] == str(len(case.of_type("SERVER")))
        assert env["DMLC_NUM_WORKER"] == str(len(case.of_type("WORKER")))
        assert env["DMLC_USE_KUBERNETES"] == "1"
        if schedulers:
            # The scheduler's own address and port, whichever replica asks.
            scheduler = pod_of(case, pods, schedulers[0], "SCHEDULER")
            assert env["DMLC_PS_ROOT_PORT"] == str(schedulers[0].port)
            assert env["DMLC_PS_ROOT_URI"].split(".")[0] == scheduler["spec"]["hostname"]
        else:
            assert "DMLC_PS_ROOT_URI" not in env
    assert_round_trip(case, job)


# --- Caffe2Job ----------------------------------------------------------------------------


@given(seed_kinds.caffe2_jobs())
def test_caffe2job_runs_its_shards_with_their_ids_and_comes_back(case: seed_kinds.Case) -> None:
    job, pods = converted(case)
    assert_one_pod_per_replica(case, pods)
    spec = case.canonical["spec"]
    backend = spec.get("backendSpecs", {})
    # The RuntimeID the operator used, then what makes the run unique: the job's UID (its name
    # here, rendered before any UID exists) and the attempt, which the kubelet fills in.
    run = (spec.get("RuntimeID"), case.canonical["metadata"]["name"], "$(KUBETRAIN_RESTART_ATTEMPT)")
    run_id = "-".join(p for p in run if p)
    for host in case.hosts:
        pod = pod_of(case, pods, host, "worker")
        assert_same_container(pod, host)
        env = seed_kinds.env(pod)
        assert (env["SHARD_ID"], env["NUM_SHARDS"], env["RUN_ID"]) == (
            str(host.index),
            str(len(case.hosts)),
            run_id,
        )
        if backend.get("backendType") == "redis":
            assert env["REDIS_HOST"] == backend["redisHost"]
            if "redisPort" in backend:
                assert env["REDIS_PORT"] == str(backend["redisPort"])
        if backend.get("backendType") == "nfs":
            assert env["NFS_PATH"] == backend["nfsPath"]
        config = json.loads(env["CAFFE2_CONFIG"])
        assert config["task"] == {"type": "worker", "index": host.index}
        assert [int(a.rsplit(":", 1)[1]) for a in config["cluster"]["worker"]] == [2222] * len(case.hosts)
    assert_round_trip(case, job)


# --- ChainerJob ---------------------------------------------------------------------------


@given(seed_kinds.chainer_jobs())
def test_chainerjob_runs_master_and_worker_sets_on_one_hostfile_and_comes_back(case: seed_kinds.Case) -> None:
    job, pods = converted(case)
    assert_one_pod_per_replica(case, pods)
    lines: list[tuple[str, int]] = []
    for host in case.hosts:
        kind_type = "master" if host.type == "master" else chainerjob.worker_type(host.type)
        pod = pod_of(case, pods, host, kind_type)
        assert_same_container(pod, host)
        lines.append((pod["spec"]["hostname"], host.slots or 1))
    hostfile = [line.split() for line in pods["<files>"]["hostfile"].splitlines()]
    found = [(h.split(".")[0], int(s.removeprefix("slots="))) for h, s in hostfile]
    # The master first (its rank 0 writes ChainerMN's logs), then every worker, in any set order.
    assert found[0] == lines[0]
    assert sorted(found[1:]) == sorted(lines[1:])
    master = seed_kinds.env(pods[f"{case.canonical['metadata']['name']}-master-0"])
    assert master["OMPI_MCA_btl_tcp_if_exclude"] == "lo,docker0"
    assert master["OMPI_MCA_orte_keep_fqdn_hostnames"] in ("t", "true")
    assert master["OMPI_MCA_orte_default_hostfile"].endswith("/hostfile")
    run = case.canonical["spec"]["master"]
    assert job.spec.run_policy.active_deadline_seconds == run.get("activeDeadlineSeconds")
    assert job.spec.run_policy.backoff_limit == run.get("backoffLimit")
    assert_round_trip(case, job)
