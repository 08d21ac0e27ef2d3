"""The MPI contract (mpi and chainer): hostfile, discover_hosts.sh, launcher env, ssh Secret, rules."""

import base64
import pathlib
import shutil
import subprocess
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from testkit.builders import JobBuilder, a_job, container, template
from testkit.rendered import framework_env

from kubetrain.api import naming, scheme, v1beta1, validation
from kubetrain.operator import lifecycle, render
from kubetrain.operator.frameworks import framework, mpi

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples" / "v1beta1"


def gpus(name: str, n: int) -> dict[str, Any]:
    return template(container(name, resources={"limits": {"nvidia.com/gpu": n}}))


def horovod(
    name: str = "hv", *, workers: int = 2, tmpl: dict[str, Any] | None = None, **options: Any
) -> JobBuilder:
    return (
        a_job(name)
        .namespace("ml")
        .uid("u-1")
        .framework("mpi", options=options or None)
        .replicas("Launcher", 1)
        .replicas("Worker", workers, tmpl=tmpl)
    )


def files(job: v1beta1.TrainingJob, fw: framework.Framework = mpi.FRAMEWORK) -> dict[str, str]:
    (cm,) = [o for o in render.render(job, fw) if o["kind"] == "ConfigMap"]
    assert cm["metadata"]["name"] == naming.config_map_name(job.metadata.name or "")
    data: dict[str, str] = cm["data"]
    return data


def envs(job: v1beta1.TrainingJob, fw: framework.Framework = mpi.FRAMEWORK) -> dict[str, dict[str, str]]:
    return {
        o["metadata"]["name"]: framework_env(o["spec"]["containers"][0])
        for o in render.render(job, fw)
        if o["kind"] == "Pod"
    }


def secret_files(secret: dict[str, Any]) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


# --- hostfile and discover_hosts.sh ---------------------------------------------------------


def test_openmpi_hostfile_lists_every_worker_with_its_gpus_as_slots() -> None:
    job = horovod(tmpl=gpus("mpi", 4)).build()
    assert files(job)["hostfile"] == "hv-worker-0.ml.svc slots=4\nhv-worker-1.ml.svc slots=4\n"


@pytest.mark.parametrize("impl", ["Intel", "MPICH"])
def test_intel_and_mpich_hostfiles_say_host_colon_slots(impl: str) -> None:
    job = horovod(tmpl=gpus("mpi", 2), mpiImplementation=impl).build()
    assert files(job)["hostfile"] == "hv-worker-0.ml.svc:2\nhv-worker-1.ml.svc:2\n"


@pytest.mark.parametrize("option", [3, "3"])
def test_slots_per_worker_wins_over_gpus(option: object) -> None:
    job = horovod(tmpl=gpus("mpi", 8), slotsPerWorker=option).build()
    assert files(job)["hostfile"] == "hv-worker-0.ml.svc slots=3\nhv-worker-1.ml.svc slots=3\n"


def test_without_gpus_or_option_a_host_has_one_slot() -> None:
    assert files(horovod(workers=1).build())["hostfile"] == "hv-worker-0.ml.svc slots=1\n"


def test_the_launcher_is_not_in_the_hostfile() -> None:
    assert "launcher" not in files(horovod().build())["hostfile"]


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_discover_hosts_prints_host_colon_slots(tmp_path: pathlib.Path) -> None:
    script = tmp_path / "discover_hosts.sh"
    script.write_text(files(horovod(tmpl=gpus("mpi", 2)).build())["discover_hosts.sh"])
    out = subprocess.run(["sh", str(script)], check=True, capture_output=True, text=True).stdout
    assert out == "hv-worker-0.ml.svc:2\nhv-worker-1.ml.svc:2\n"


# --- env ------------------------------------------------------------------------------------


# What Kubeflow's MPIJob gives a launcher that asks for no GPU: the NVIDIA runtime then hands it none.
NO_GPUS = {"NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""}


@pytest.mark.parametrize(
    ("impl", "expected"),
    [
        (
            None,
            {
                "K_MPI_JOB_ROLE": "launcher",
                "OMPI_MCA_orte_default_hostfile": "/etc/kubetrain/hostfile",
                "OMPI_MCA_plm_rsh_agent": "ssh",
                "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
                "OMPI_MCA_btl_tcp_if_exclude": "lo,docker0",
                "OMPI_MCA_odls_base_sigkill_timeout": "0",
                **NO_GPUS,
            },
        ),
        (
            "Intel",
            {"K_MPI_JOB_ROLE": "launcher", "I_MPI_HYDRA_HOST_FILE": "/etc/kubetrain/hostfile", **NO_GPUS},
        ),
        ("MPICH", {"K_MPI_JOB_ROLE": "launcher", "HYDRA_HOST_FILE": "/etc/kubetrain/hostfile", **NO_GPUS}),
    ],
)
def test_launcher_env_per_implementation(impl: str | None, expected: dict[str, str]) -> None:
    options = {"mpiImplementation": impl} if impl else {}
    env = envs(horovod(**options).build())
    assert env["hv-launcher-0"] == expected
    # Workers need no rank: mpirun assigns ranks to the processes it starts over ssh.
    assert env["hv-worker-0"] == env["hv-worker-1"] == {"K_MPI_JOB_ROLE": "worker"}


def test_a_launcher_that_asks_for_gpus_keeps_them() -> None:
    job = (
        a_job("hv")
        .framework("mpi")
        .replicas("Launcher", 1, tmpl=gpus("mpi", 1))
        .replicas("Worker", 1)
        .build()
    )
    assert not set(NO_GPUS) & set(envs(job)["hv-launcher-0"])


def test_a_chainer_master_without_gpus_is_hidden_the_nodes_gpus_too() -> None:
    job = (
        a_job("cj").framework("chainer").replicas("Master", 1).replicas("Worker", 1, tmpl=gpus("chainer", 2))
    )
    env = envs(job.build(), mpi.CHAINER)
    assert NO_GPUS.items() <= env["cj-master-0"].items()
    assert not set(NO_GPUS) & set(env["cj-worker-0"])


def test_a_users_own_gpu_visibility_is_kept() -> None:
    tmpl = template(container("mpi", env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "0"}]))
    job = a_job("hv").framework("mpi").replicas("Launcher", 1, tmpl=tmpl).replicas("Worker", 1).build()
    env = envs(job)["hv-launcher-0"]
    assert env["NVIDIA_VISIBLE_DEVICES"] == "0"
    assert env["NVIDIA_DRIVER_CAPABILITIES"] == ""


def test_hostfile_env_names_the_mounted_file() -> None:
    pods = {
        o["metadata"]["name"]: o
        for o in render.render(horovod().build(), mpi.FRAMEWORK)
        if o["kind"] == "Pod"
    }
    container = pods["hv-launcher-0"]["spec"]["containers"][0]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    env = framework_env(container)
    assert env["OMPI_MCA_orte_default_hostfile"] == f"{mounts['kubetrain-config']}/hostfile"


@pytest.mark.parametrize(
    ("name", "value"),
    # The second gives the other ranks of a failed world Open MPI's second after SIGTERM back.
    [("OMPI_MCA_btl_tcp_if_exclude", "lo"), ("OMPI_MCA_odls_base_sigkill_timeout", "1")],
)
def test_a_users_own_variable_is_kept(name: str, value: str) -> None:
    tmpl = template(container("mpi", env=[{"name": name, "value": value}]))
    job = a_job("hv").framework("mpi").replicas("Launcher", 1, tmpl=tmpl).replicas("Worker", 1).build()
    env = [e for e in envs(job)["hv-launcher-0"].items() if e[0] == name]
    assert env == [(name, value)]


# --- chainer --------------------------------------------------------------------------------


def chainer_job() -> v1beta1.TrainingJob:
    return (
        a_job("cj")
        .namespace("ml")
        .framework("chainer")
        .replicas("Master", 1, tmpl=gpus("chainer", 1))
        .replicas("WorkerGpu", 2, tmpl=gpus("chainer", 4))
        .replicas("WorkerCpu", 1)
        .build()
    )


def test_chainer_hostfile_has_the_master_first_then_every_worker_set() -> None:
    assert files(chainer_job(), mpi.CHAINER)["hostfile"] == (
        "cj-master-0.ml.svc slots=1\n"
        "cj-workercpu-0.ml.svc slots=1\n"
        "cj-workergpu-0.ml.svc slots=4\n"
        "cj-workergpu-1.ml.svc slots=4\n"
    )


def test_chainer_master_is_the_launcher_and_every_set_is_workers() -> None:
    env = envs(chainer_job(), mpi.CHAINER)
    assert set(env) == {"cj-master-0", "cj-workergpu-0", "cj-workergpu-1", "cj-workercpu-0"}
    assert env["cj-master-0"]["OMPI_MCA_orte_default_hostfile"] == "/etc/kubetrain/hostfile"
    assert env["cj-master-0"]["K_MPI_JOB_ROLE"] == "launcher"
    assert {name: e["K_MPI_JOB_ROLE"] for name, e in env.items() if name != "cj-master-0"} == {
        "cj-workergpu-0": "worker",
        "cj-workergpu-1": "worker",
        "cj-workercpu-0": "worker",
    }


# --- lifecycle defaults ---------------------------------------------------------------------


def test_the_launcher_starts_after_every_worker_and_alone_decides_success() -> None:
    job = a_job("hv").framework("mpi").replicas("launcher", 1).replicas("Worker", 2).build()
    defaults = lifecycle.Defaults.of(mpi.FRAMEWORK, job.spec)
    assert defaults.start_after == {"launcher": ("Worker",)}
    assert defaults.success == v1beta1.SuccessPolicy(
        targets=(v1beta1.SuccessTarget(replica_type="launcher", index=0),)
    )


def test_chainer_master_starts_after_a_worker_set_named_worker_and_decides_success() -> None:
    job = a_job("cj").framework("chainer").replicas("Master", 1).replicas("Worker", 2).build()
    defaults = lifecycle.Defaults.of(mpi.CHAINER, job.spec)
    assert defaults.start_after == {"Master": ("Worker",)}
    assert defaults.success.targets == (v1beta1.SuccessTarget(replica_type="Master", index=0),)


def test_chainer_master_starts_after_every_worker_set() -> None:
    defaults = lifecycle.Defaults.of(mpi.CHAINER, chainer_job().spec)
    assert sorted(defaults.start_after["Master"]) == ["WorkerCpu", "WorkerGpu"]


@pytest.mark.parametrize("fw", [mpi.FRAMEWORK, mpi.CHAINER], ids=lambda f: f.name)
def test_a_failure_restarts_the_whole_world_and_user_errors_are_final(fw: framework.Framework) -> None:
    assert fw.restart_scope is v1beta1.RestartScope.JOB
    assert fw.restart_policy is v1beta1.RestartPolicy.EXIT_CODE
    assert fw.services


# --- the ssh Secret -------------------------------------------------------------------------


def test_one_secret_per_render_with_a_matching_openssh_key_pair() -> None:
    objects = render.render(horovod().build(), mpi.FRAMEWORK)
    (secret,) = [o for o in objects if o["kind"] == "Secret"]
    assert secret["metadata"]["name"] == "hv-ssh"
    assert secret["metadata"]["namespace"] == "ml"
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    data = secret_files(secret)
    assert set(data) == {"id_ed25519", "id_ed25519.pub", "authorized_keys", "config"}
    private = serialization.load_ssh_private_key(data["id_ed25519"].encode(), password=None)
    public = serialization.load_ssh_public_key(data["id_ed25519.pub"].encode())
    assert isinstance(private, ed25519.Ed25519PrivateKey)
    assert isinstance(public, ed25519.Ed25519PublicKey)
    assert private.public_key().public_bytes_raw() == public.public_bytes_raw()
    signature = private.sign(b"mpirun")
    public.verify(signature, b"mpirun")  # raises if the halves do not match
    assert data["authorized_keys"] == data["id_ed25519.pub"]
    assert data["id_ed25519.pub"].startswith("ssh-ed25519 AAAA")


def test_every_render_makes_a_new_key_so_the_reconciler_must_keep_the_first() -> None:
    job = horovod().build()
    keys = {
        secret_files(o)["id_ed25519.pub"]
        for _ in range(2)
        for o in render.render(job, mpi.FRAMEWORK)
        if o["kind"] == "Secret"
    }
    assert len(keys) == 2


def test_every_pod_mounts_the_secret_read_only_with_mode_0600() -> None:
    pods = [o for o in render.render(horovod().build(), mpi.FRAMEWORK) if o["kind"] == "Pod"]
    assert len(pods) == 3
    for pod in pods:
        volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
        mounts = {m["name"]: m for m in pod["spec"]["containers"][0]["volumeMounts"]}
        assert volumes["kubetrain-secret"]["secret"] == {"secretName": "hv-ssh", "defaultMode": 0o600}
        assert mounts["kubetrain-secret"] == {
            "name": "kubetrain-secret",
            "mountPath": "/root/.ssh",
            "readOnly": True,
        }


def test_ssh_config_skips_host_keys_and_names_non_default_ports() -> None:
    job = (
        a_job("hv").namespace("ml").framework("mpi").replicas("Launcher", 1).replicas("Worker", 1, port=2222)
    )
    (config,) = [
        secret_files(o)["config"] for o in render.render(job.build(), mpi.FRAMEWORK) if o["kind"] == "Secret"
    ]
    assert config.startswith("Host hv-worker-0.ml.svc\n    Port 2222\nHost *\n")
    assert "    StrictHostKeyChecking no\n" in config
    assert "hv-launcher-0" not in config  # on port 22


def test_render_makes_configmap_secret_services_and_pods_in_that_order() -> None:
    objects = render.render(horovod().build(), mpi.FRAMEWORK)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ConfigMap", "hv-config"),
        ("Secret", "hv-ssh"),
        ("Service", "hv-launcher-0"),
        ("Service", "hv-worker-0"),
        ("Service", "hv-worker-1"),
        ("Pod", "hv-launcher-0"),
        ("Pod", "hv-worker-0"),
        ("Pod", "hv-worker-1"),
    ]
    ports = {o["metadata"]["name"]: o["spec"]["ports"] for o in objects if o["kind"] == "Service"}
    assert ports["hv-worker-0"] == [{"name": "ssh", "port": 22, "targetPort": 22}]
    launcher = next(o for o in objects if o["metadata"]["name"] == "hv-launcher-0" and o["kind"] == "Pod")
    assert launcher["metadata"]["labels"][naming.JOB_ROLE] == "master"
    assert launcher["spec"]["restartPolicy"] == "Never"  # ExitCode: the operator decides


# --- validation -----------------------------------------------------------------------------


def refused(job: v1beta1.TrainingJob, fw: framework.Framework) -> list[str]:
    with pytest.raises(validation.ValidationError) as e:
        render.render(job, fw)
    return str(e.value).splitlines()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"mpiImplementation": "OpenMPI5"},
            "spec.framework.options.mpiImplementation: must be one of OpenMPI, Intel, MPICH, not 'OpenMPI5'",
        ),
        ({"slotsPerWorker": 0}, "spec.framework.options.slotsPerWorker: must be a positive integer, not 0"),
        (
            {"slotsPerWorker": "two"},
            "spec.framework.options.slotsPerWorker: must be a positive integer, not 'two'",
        ),
        (
            {"slotsPerWorker": True},
            "spec.framework.options.slotsPerWorker: must be a positive integer, not True",
        ),
        (
            {"slotPerWorker": 2},
            "spec.framework.options.slotPerWorker: mpi has no option slotPerWorker "
            "(known: mpiImplementation, slotsPerWorker)",
        ),
    ],
)
def test_bad_options_are_refused_with_their_path(options: dict[str, Any], message: str) -> None:
    assert message in refused(horovod(**options).build(), mpi.FRAMEWORK)


def test_chainer_checks_options_too() -> None:
    job = a_job("cj").framework("chainer", options={"mpiImplementation": "LAM"}).replicas("Master", 1).build()
    assert refused(job, mpi.CHAINER) == [
        "spec.framework.options.mpiImplementation: must be one of OpenMPI, Intel, MPICH, not 'LAM'"
    ]


@pytest.mark.parametrize(
    ("job", "message"),
    [
        (
            a_job("hv").framework("mpi").replicas("Worker", 2).build(),
            "spec.replicaSpecs: mpi needs at least 1 Launcher",
        ),
        (
            a_job("hv").framework("mpi").replicas("Launcher", 2).replicas("Worker", 1).build(),
            "spec.replicaSpecs.Launcher.replicas: mpi allows at most 1 Launcher",
        ),
        (
            a_job("hv").framework("mpi").replicas("Launcher", 1).build(),
            "spec.replicaSpecs: mpi needs at least 1 Worker",
        ),
        (
            a_job("hv")
            .framework("mpi")
            .replicas("Launcher", 1)
            .replicas("Worker", 1)
            .replicas("PS", 1)
            .build(),
            "spec.replicaSpecs.PS: mpi has no replica type PS (allowed: Launcher, Worker)",
        ),
    ],
)
def test_mpi_needs_one_launcher_and_workers(job: v1beta1.TrainingJob, message: str) -> None:
    assert message in refused(job, mpi.FRAMEWORK)


@pytest.mark.parametrize(
    ("job", "message"),
    [
        (
            a_job("cj").framework("chainer").replicas("WorkerGpu", 2).build(),
            "spec.replicaSpecs: chainer needs at least 1 Master",
        ),
        (
            a_job("cj").framework("chainer").replicas("Master", 2).build(),
            "spec.replicaSpecs.Master.replicas: chainer allows at most 1 Master",
        ),
        (
            a_job("cj").framework("chainer").replicas("Master", 1).replicas("PS", 1).build(),
            "spec.replicaSpecs.PS: chainer has no replica type PS (allowed: Master, Worker*)",
        ),
    ],
)
def test_chainer_needs_one_master_and_worker_sets(job: v1beta1.TrainingJob, message: str) -> None:
    assert message in refused(job, mpi.CHAINER)


def test_chainer_accepts_a_master_alone_and_any_worker_set_name() -> None:
    job = a_job("cj").framework("chainer").replicas("master", 1).replicas("workerBig", 1).build()
    assert framework.validate(mpi.CHAINER, job) == []


# --- samples --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sample", "fw", "hostfile"),
    [
        (
            "mpi-horovod.yaml",
            mpi.FRAMEWORK,
            "mpi-horovod-worker-0.default.svc slots=2\nmpi-horovod-worker-1.default.svc slots=2\n",
        ),
        (
            "chainer.yaml",
            mpi.CHAINER,
            "chainer-master-0.default.svc slots=1\nchainer-workercpu-0.default.svc slots=1\n"
            "chainer-workergpu-0.default.svc slots=2\nchainer-workergpu-1.default.svc slots=2\n",
        ),
    ],
)
def test_samples_decode_validate_and_render(sample: str, fw: framework.Framework, hostfile: str) -> None:
    job = scheme.to_hub(scheme.decode(yaml.safe_load((SAMPLES / sample).read_text())))
    assert job.spec.framework.name == fw.name
    assert framework.validate(fw, job) == []
    assert files(job, fw)["hostfile"] == hostfile


def test_the_chainer_master_is_labelled_the_master_and_comes_first() -> None:
    pods = [o for o in render.render(chainer_job(), mpi.CHAINER) if o["kind"] == "Pod"]
    roles = [(p["metadata"]["name"], p["metadata"]["labels"][naming.JOB_ROLE]) for p in pods]
    assert roles[0][1] == "master"
    assert roles[0][0].endswith("-master-0")
    assert {role for _, role in roles[1:]} == {"worker"}
