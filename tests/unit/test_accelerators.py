"""The operator-wide accelerator config: env and host volumes for containers that request a device."""

import pathlib

import pytest

from kubetrain.api import validation
from kubetrain.operator import accelerators, main

CONFIG = """
nvidia.com/gpu:
  env:
    LD_LIBRARY_PATH: /usr/local/nvidia/lib64
    NCCL_DEBUG: WARN
  volumes:
  - {name: nvidia, hostPath: /usr/local/nvidia, mountPath: /usr/local/nvidia}
"""


def pod(*containers: dict[str, object]) -> dict[str, object]:
    return {"spec": {"containers": list(containers)}}


def test_containers_requesting_the_resource_get_its_env_and_volumes(tmp_path: pathlib.Path) -> None:
    (tmp_path / "acc.yaml").write_text(CONFIG)
    config = accelerators.load(tmp_path / "acc.yaml")
    gpu = {
        "name": "train",
        "resources": {"limits": {"nvidia.com/gpu": "2"}},
        "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
    }
    cpu = {"name": "sidecar"}
    p = pod(gpu, cpu)
    accelerators.apply(p, config)
    assert gpu["env"] == [
        {"name": "NCCL_DEBUG", "value": "INFO"},
        {"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"},
    ], "the user's own NCCL_DEBUG wins"
    assert gpu["volumeMounts"] == [{"name": "nvidia", "mountPath": "/usr/local/nvidia", "readOnly": True}]
    assert p["spec"]["volumes"] == [{"name": "nvidia", "hostPath": {"path": "/usr/local/nvidia"}}]  # type: ignore[index]
    assert "env" not in cpu
    assert "volumeMounts" not in cpu


def test_a_bad_config_names_the_field(tmp_path: pathlib.Path) -> None:
    (tmp_path / "acc.yaml").write_text("nvidia.com/gpu:\n  volumes:\n  - {name: x, hostPath: /x}\n")
    with pytest.raises(validation.ValidationError, match="mountPath"):
        accelerators.load(tmp_path / "acc.yaml")


def test_the_operator_refuses_a_bad_config_with_a_message(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:

    (tmp_path / "acc.yaml").write_text("nvidia.com/gpu: {env: {A: 1}}\n")
    assert (
        main.main(["--accelerator-config", str(tmp_path / "acc.yaml"), "--kubeconfig", "/nonexistent"]) == 2
    )
    assert "env.A" in capsys.readouterr().err
