"""The harness itself: what testkit.replicas maps, and what it must leave alone."""

from __future__ import annotations

import copy
from pathlib import Path

from testkit import replicas
from testkit.builders import a_job

from kubetrain.operator import render
from kubetrain.operator.frameworks import mpi, pytorch


def test_hosts_and_ports_become_each_pods_loopback_address_and_one_free_port(tmp_path: Path) -> None:
    job = a_job("tj").namespace("ml").framework("pytorch").replicas("Master", 1).replicas("Worker", 2).build()
    local = replicas.localize(render.render(job, pytorch.FRAMEWORK), container="pytorch", workdir=tmp_path)

    master, *workers = local.replicas
    assert [r.address for r in local.replicas] == ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
    port = local.ports[pytorch.FRAMEWORK.port]
    assert port != pytorch.FRAMEWORK.port
    for r in local.replicas:
        assert (r.env["MASTER_ADDR"], r.env["MASTER_PORT"]) == (master.address, str(port))
        assert r.env["PET_MASTER_PORT"] == str(port)
    assert [w.env["RANK"] for w in workers] == ["1", "2"]  # numbers that are no ports stay
    for name in ("tj-worker-1", "tj-worker-1.ml", "tj-worker-1.ml.svc", "tj-worker-1.tj-worker-1.ml.svc"):
        assert local.hosts[name] == "127.0.0.4"


def test_files_and_mount_paths_are_the_replicas_own(tmp_path: Path) -> None:
    job = (
        a_job("hv")
        .framework("mpi", options={"slotsPerWorker": 22})
        .replicas("Launcher", 1)
        .replicas("Worker", 2, port=2022)
        .build()
    )
    local = replicas.localize(render.render(job, mpi.FRAMEWORK), container="mpi", workdir=tmp_path)

    launcher, w0, w1 = local.replicas
    hostfile = launcher.file("/etc/kubetrain/hostfile")
    assert launcher.env["OMPI_MCA_orte_default_hostfile"] == str(hostfile)
    assert hostfile.is_relative_to(launcher.root)
    # 22 is a slot count here, not the ssh port: only the port of a host:port or a Port line maps.
    assert hostfile.read_text() == f"{w0.address} slots=22\n{w1.address} slots=22\n"
    discover = launcher.file("/etc/kubetrain/discover_hosts.sh").read_text()
    assert f"echo {w0.address}:22\n" in discover
    config = launcher.file("/root/.ssh/config").read_text()
    assert f"Host {w0.address}\n    Port {local.ports[2022]}\n" in config
    assert launcher.file("/root/.ssh/id_ed25519").stat().st_mode & 0o777 == render.SECRET_MODE


def test_a_name_that_no_service_backs_is_left_alone(tmp_path: Path) -> None:
    job = a_job("tj").framework("pytorch").replicas("Master", 1).replicas("Worker", 1).build()
    objects = render.render(job, pytorch.FRAMEWORK)
    objects = [o for o in objects if not (o["kind"] == "Service" and o["metadata"]["name"] == "tj-worker-0")]
    pod = copy.deepcopy(next(o for o in objects if o["kind"] == "Pod"))
    pod["spec"]["containers"][0]["env"] = [{"name": "PEER", "value": "tj-worker-0.default.svc:23456"}]
    objects = [*objects, {**pod, "metadata": {**pod["metadata"], "name": "extra"}}]

    local = replicas.localize(objects, container="pytorch", workdir=tmp_path)

    assert "tj-worker-0.default.svc" not in local.hosts  # no Service: cluster DNS would not know it
    assert local.replicas[-1].env["PEER"] == "tj-worker-0.default.svc:23456"


def test_only_the_pod_env_reaches_a_process(tmp_path: Path) -> None:
    job = a_job("tj").framework("pytorch").replicas("Worker", 1).build()
    (replica,) = replicas.localize(
        render.render(job, pytorch.FRAMEWORK), container="pytorch", workdir=tmp_path
    ).replicas
    with replicas.Processes() as procs:
        procs.start(replica, ["/usr/bin/env"], extra={"IMAGE": "1", "PYTHONUNBUFFERED": None})
        (finished,) = procs.wait(30)
    env = dict(line.split("=", 1) for line in finished.stdout.splitlines())
    assert set(env) == {"PATH", "HOME", "LANG", "IMAGE", *replica.env} - {"PYTHONUNBUFFERED"}
    assert env["MASTER_ADDR"] == replica.address  # Worker 0 is the master of a job without one
