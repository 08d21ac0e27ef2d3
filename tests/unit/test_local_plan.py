"""A job mapped to local processes (kubetrain.operator.local): addresses, commands, env, folders,
and every reason a job cannot run here, said before anything starts."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from testkit.builders import a_job, container, template

from kubetrain.api import v1beta1
from kubetrain.operator import local
from kubetrain.operator.frameworks import framework as fw_contract
from kubetrain.operator.frameworks import pytorch, registry, tensorflow
from kubetrain.operator.local import machine


def prepare(job: v1beta1.TrainingJob, tmp_path: Path, **options: Any) -> local.Prepared:
    fw = registry.default().get(job.spec.framework.name)
    environ = {"PATH": "/usr/bin:/bin", "HOME": "/home/me"}
    # Free ports unless a test asks: a run side by side (another test's) may hold a job's own ports.
    options.setdefault("free_ports", True)
    opts = local.Options(cwd=str(tmp_path), environ=environ, **options)
    return local.prepare(v1beta1.trainingjob_defaults.on_create(job), fw, opts)


def refusals(job: v1beta1.TrainingJob, tmp_path: Path, **options: Any) -> list[str]:
    with pytest.raises(local.NotRunnableError) as e:
        prepare(job, tmp_path, **options)
    return list(e.value.lines)


def one(ready: local.Prepared, pod: str) -> local.Launch:
    return next(launch for launch in ready.launches(ready.job) if launch.pod == pod)


def test_each_replica_is_this_machine_at_its_type_s_port_plus_its_position() -> None:
    # The rule is the same on every run, so a person can tell where the master listens.
    job = a_job("pt").framework("pytorch").replicas("Worker", 2).replicas("Master", 1).build()
    got = machine.addresses(job, pytorch.FRAMEWORK).addresses
    assert got == {
        ("Master", 0): fw_contract.Address(host="127.0.0.1", port=23456),
        ("Worker", 0): fw_contract.Address(host="127.0.0.1", port=23457),
        ("Worker", 1): fw_contract.Address(host="127.0.0.1", port=23458),
    }
    # A port another replica has is passed over: never two replicas on one port.
    tf = a_job("tf").framework("tensorflow").replicas("Chief", 1).replicas("Worker", 1, port=2222).build()
    ports = [a.port for a in machine.addresses(tf, tensorflow.FRAMEWORK).addresses.values()]
    assert sorted(ports) == [2222, 2223]


def test_the_command_runs_with_the_rendered_env_expanded_as_the_kubelet_expands_it(tmp_path: Path) -> None:
    c = container(
        "pytorch",
        command=["python3", "train.py"],
        args=["--rank=$(RANK)", "--literal=$$(RANK)", "--unset=$(NOPE)"],
        env=[
            {"name": "WHO", "value": "rank $(RANK) of $(WORLD_SIZE)"},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ],
    )
    master = template(container("pytorch", command=["true"]))
    job = (
        a_job("pt")
        .framework("pytorch")
        .replicas("Master", 1, tmpl=master)
        .replicas("Worker", 1, tmpl=template(c))
    ).build()
    ready = prepare(job, tmp_path)
    w = one(ready, "pt-worker-0")
    assert w.argv == ("python3", "train.py", "--rank=1", "--literal=$(RANK)", "--unset=$(NOPE)")
    assert (w.env["POD"], w.env["IP"]) == ("pt-worker-0", "127.0.0.1")
    master_port = ready.machine.addresses[("Master", 0)].port
    assert (w.env["MASTER_ADDR"], w.env["MASTER_PORT"]) == ("127.0.0.1", str(master_port))
    assert w.env["HOME"] == "/home/me"  # the user's environment, the pod's env over it
    assert w.cwd == str(tmp_path)  # no workingDir: where kubetrain run starts
    assert (w.replica, w.restart_policy) == ("worker-0", "OnFailure")


def test_volumes_are_local_folders_and_paths_under_them_are_given_as_those(tmp_path: Path) -> None:
    c = container(
        "pytorch",
        command=["python3", "train.py", "--checkpoint=/ckpt/step", "/data/x"],
        workingDir="/data",
        env=[{"name": "OUT", "value": "/scratch/out"}],
        volumeMounts=[
            {"name": "ckpt", "mountPath": "/ckpt"},
            {"name": "data", "mountPath": "/data"},
            {"name": "scratch", "mountPath": "/scratch/"},
        ],
    )
    tmpl = template(c)
    tmpl["spec"]["volumes"] = [
        {"name": "ckpt", "persistentVolumeClaim": {"claimName": "shared"}},
        {"name": "data", "hostPath": {"path": str(tmp_path / "host")}},
        {"name": "scratch", "emptyDir": {}},
    ]
    job = (
        a_job("pt")
        .framework("pytorch")
        .replicas("Worker", 2, tmpl=tmpl)
        .with_spec(progress=v1beta1.ProgressSpec(deadline_seconds=60))
        .build()
    )
    ready = prepare(job, tmp_path, run_dir="runs")
    w0, w1 = one(ready, "pt-worker-0"), one(ready, "pt-worker-1")
    run = tmp_path / "runs" / "pt"
    assert w0.argv == ("python3", "train.py", f"--checkpoint={run}/claims/shared/step", f"{tmp_path}/host/x")
    assert w1.argv[2] == w0.argv[2]  # a claim is shared by every replica
    assert w0.env["OUT"] == f"{run}/pods/pt-worker-0/volumes/scratch/out"  # an emptyDir is the pod's
    assert w0.cwd == f"{tmp_path}/host"
    assert w0.progress_file == f"{run}/pods/pt-worker-0/volumes/kubetrain-progress/progress"
    assert w0.env["KUBETRAIN_PROGRESS_FILE"] == w0.progress_file


def test_kubetrain_s_files_are_written_in_the_pod_s_folder(tmp_path: Path) -> None:
    job = (
        a_job("hv")
        .framework("mpi", options={"slotsPerWorker": 2})
        .replicas("Launcher", 1, tmpl=template(container("mpi", command=["true"])))
        .replicas("Worker", 2, tmpl=template(container("mpi", command=["sshd", "-De"])))
        .build()
    )
    ready = prepare(job, tmp_path)
    launcher = one(ready, "hv-launcher-0")
    files = {Path(path).name: (text, mode) for path, text, mode in launcher.files}
    # One line for this machine, with every Worker's slots: Open MPI refuses a host named twice.
    assert files["hostfile"] == ("127.0.0.1 slots=4\n", 0o555)
    assert files["id_ed25519"][1] == 0o600
    assert launcher.env["OMPI_MCA_orte_default_hostfile"].endswith("/volumes/kubetrain-config/hostfile")
    assert one(ready, "hv-worker-0").stand_in  # sshd is not needed: mpirun starts every rank here


def test_everything_that_cannot_run_here_is_said_at_once(tmp_path: Path) -> None:
    bare = template(container("pytorch"))  # no command: the image's entrypoint
    odd = template(
        container(
            "pytorch",
            command=["no-such-program-anywhere"],
            workingDir="/workspace/nowhere",
            env=[{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "t"}}}],
            volumeMounts=[{"name": "nfs", "mountPath": "/nfs"}],
        )
    )
    odd["spec"]["volumes"] = [{"name": "nfs", "nfs": {"server": "x", "path": "/"}}]
    odd["spec"]["initContainers"] = [{"name": "fetch", "image": "busybox", "command": ["true"]}]
    job = (
        a_job("bad")
        .framework("pytorch")
        .replicas("Master", 1, tmpl=bare)
        .replicas("Worker", 1, tmpl=odd)
        .build()
    )
    lines = refusals(job, tmp_path)
    assert lines == [
        "Master/0: container 'pytorch' has no command: its image's entrypoint would run, and a local run "
        "pulls no image (give the container a command)",
        "Worker/0: init container 'fetch' cannot run locally: only each replica's main container runs "
        "(remove it, or pass --skip-extra-containers to leave it out)",
        "Worker/0: volume 'nfs' (nfs) has no local folder: a local run maps emptyDir, persistentVolumeClaim, "
        "hostPath, downwardAPI and kubetrain's own ConfigMap and Secret",
        "Worker/0: env TOKEN: valueFrom secretKeyRef (creds) cannot be read without a cluster (give it a value)",
        "Worker/0: no-such-program-anywhere: command not found on this machine's PATH",
        "Worker/0: workingDir /workspace/nowhere is not a folder on this machine (a local run uses the "
        "image's paths only where this machine has them: leave workingDir out to run where kubetrain run "
        "starts)",
    ]


def test_extra_containers_may_be_left_out_with_a_warning(tmp_path: Path) -> None:
    tmpl = template(container("pytorch", command=["true"]), container("logger", command=["true"]))
    job = a_job("sc").framework("pytorch").replicas("Worker", 1, tmpl=tmpl).build()
    assert refusals(job, tmp_path)[0].startswith("Worker/0: container 'logger' cannot run locally")
    ready = prepare(job, tmp_path, skip_extra=True)
    assert ready.warnings == (
        "Worker/0: container 'logger' cannot run locally: only each replica's main container runs; "
        "left out (--skip-extra-containers)",
    )


def test_a_port_something_listens_on_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        tmpl = template(container("jax", command=["true"]))
        job = a_job("jx").framework("jax").replicas("Worker", 1, tmpl=tmpl, port=port).build()
        (line,) = refusals(job, tmp_path, free_ports=False)
    assert line.startswith(f"Worker/0: port {port} on 127.0.0.1 is taken: stop what listens there")


def test_replicas_a_scale_up_adds_get_ports_of_their_own_and_the_others_keep_theirs() -> None:
    two = a_job("el").framework("pytorch").replicas("Worker", 2).build()
    three = a_job("el").framework("pytorch").replicas("Worker", 3).build()
    before = machine.addresses(two, pytorch.FRAMEWORK, free=True)
    after = machine.addresses(three, pytorch.FRAMEWORK, before).addresses
    assert {k: after[k] for k in before.addresses} == before.addresses
    assert after[("Worker", 2)].port not in {a.port for a in before.addresses.values()}


def test_a_job_the_step_would_never_run_here_is_refused_and_what_differs_is_said(tmp_path: Path) -> None:
    tmpl = template(container("jax", command=["true"]))
    base = a_job("jx").framework("jax").replicas("Worker", 1, tmpl=tmpl)
    suspended = base.with_spec(run_policy=v1beta1.RunPolicy(suspend=True)).build()
    assert refusals(suspended, tmp_path) == [
        "runPolicy.suspend: a suspended job runs no replica: set it false to run the job here"
    ]
    elsewhere = a_job("jx").framework("jax").replicas("Worker", 1, tmpl=tmpl)
    elsewhere = elsewhere.with_spec(managed_by="kueue.x-k8s.io/multikueue").build()
    assert refusals(elsewhere, tmp_path)[0].startswith(
        "managedBy: kueue.x-k8s.io/multikueue manages this job"
    )
    in_place = a_job("jx").framework("jax").replicas("Worker", 1, tmpl=tmpl)
    policy = v1beta1.FailurePolicy(restart_method=v1beta1.RestartMethod.IN_PLACE)
    ready = prepare(in_place.with_spec(failure_policy=policy).build(), tmp_path)
    assert ready.warnings == (
        "failurePolicy.restartMethod InPlace: restarts make the processes again, as Recreate",
    )
