"""A job made from a runtime, expanded: the merge rule, the trainer table, the chain of runtimes,
and errors said in the terms of whoever wrote the field (kubetrain.operator.expansion)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubetrain.api import v1beta1, validation
from kubetrain.operator import expansion, intake, render

GROUP = v1beta1.API_VERSION


def runtime(name: str = "torch", kind: str = "ClusterTrainingRuntime", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "framework": {"name": "pytorch"},
        "replicaSpecs": {
            "Worker": {
                "replicas": 1,
                "template": {
                    "spec": {"containers": [{"name": "pytorch", "env": [{"name": "A", "value": "1"}]}]}
                },
            }
        },
    }
    body.update(spec)
    meta: dict[str, Any] = {"name": name, "generation": 4}
    if kind == "TrainingRuntime":
        meta["namespace"] = "ns"
    return {"apiVersion": GROUP, "kind": kind, "metadata": meta, "spec": body}


def job(ref: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": "TrainingJob",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"runtimeRef": ref or {"name": "torch"}, **spec},
    }


def expand(obj: dict[str, Any], *runtimes: dict[str, Any]) -> expansion.Expanded:
    return expansion.expand(obj, expansion.from_documents(runtimes or (runtime(),)))


def main(e: expansion.Expanded, replica_type: str = "Worker") -> dict[str, Any]:
    container: dict[str, Any] = e.obj["spec"]["replicaSpecs"][replica_type]["template"]["spec"]["containers"][
        0
    ]
    return container


# --- the merge rule ----------------------------------------------------------------------------


def test_maps_merge_key_by_key_named_lists_by_name_other_lists_are_replaced_and_null_removes() -> None:
    base = {
        "a": {"x": 1, "y": 2},
        "containers": [{"name": "m", "image": "b", "args": ["1"]}, {"name": "side", "image": "s"}],
        "args": ["1", "2"],
        "gone": 3,
    }
    over = {
        "a": {"y": 5, "z": 6},
        "containers": [{"name": "m", "args": ["9"]}, {"name": "new", "image": "n"}],
        "args": ["3"],
        "gone": None,
    }
    origins: dict[validation.Path, expansion.Where] = {}
    out = expansion.merge(base, over, (), ("over", ()), origins)
    assert out == {
        "a": {"x": 1, "y": 5, "z": 6},
        "containers": [
            {"name": "m", "image": "b", "args": ["9"]},
            {"name": "side", "image": "s"},
            {"name": "new", "image": "n"},
        ],
        "args": ["3"],
    }
    assert origins[("containers", 0, "args")] == ("over", ("containers", 0, "args"))
    assert origins[("containers", 2)] == ("over", ("containers", 1))
    assert ("containers", 1) not in origins  # the base's: nobody said otherwise


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from("abcd"), inner, max_size=3)
        | st.lists(
            st.fixed_dictionaries({"name": st.sampled_from("pqr"), "v": inner}),
            max_size=3,
            unique_by=lambda d: d["name"],
        )
    ),
    max_leaves=12,
)


@given(
    base=st.dictionaries(st.sampled_from("abcd"), JSON, max_size=4),
    over=st.dictionaries(st.sampled_from("abcd"), JSON, max_size=4),
)
def test_merging_the_same_fields_again_changes_nothing_and_the_inputs_stay_as_they_were(
    base: dict[str, Any], over: dict[str, Any]
) -> None:
    before = copy.deepcopy((base, over))
    once = expansion.merge(base, over, (), ("o", ()), {})
    assert expansion.merge(once, over, (), ("o", ()), {}) == once
    assert (base, over) == before
    assert expansion.merge(base, {}, (), ("o", ()), {}) == base
    for k, v in over.items():  # what the later writer says of a plain value is what holds
        if v is None:
            assert k not in once
        elif not isinstance(v, dict | list):
            assert once[k] == v


# --- the trainer -------------------------------------------------------------------------------


def test_a_short_job_becomes_a_whole_job_with_the_trainer_in_the_runtimes_node_type() -> None:
    e = expand(
        job(
            trainer={
                "image": "img:1",
                "command": ["torchrun", "train.py"],
                "args": ["--lr", "0.1"],
                "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}],
                "numNodes": 3,
                "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}, "requests": {"cpu": "1"}},
                "procsPerNode": "2",
            }
        )
    )
    c = main(e)
    assert (c["image"], c["command"], c["args"]) == ("img:1", ["torchrun", "train.py"], ["--lr", "0.1"])
    assert {v["name"]: v["value"] for v in c["env"]} == {"A": "2", "B": "3"}
    assert c["resources"] == {"limits": {"nvidia.com/gpu": 2}, "requests": {"cpu": "1"}}
    spec = e.obj["spec"]
    assert spec["replicaSpecs"]["Worker"]["replicas"] == 3
    assert spec["framework"]["pytorch"] == {"nprocPerNode": "2"}
    assert spec["runtimeRef"] == {"kind": "ClusterTrainingRuntime", "name": "torch", "generation": 4}
    assert spec["network"] == {"hostNames": "PerJob"}  # what a v1beta1 job is given at creation
    assert spec["trainer"]["numNodes"] == 3  # kept as written, beside the result
    decoded = intake.decode(e.obj, weigh=True)
    pods = [o for o in render.render(decoded.job, decoded.framework) if o["kind"] == "Pod"]
    assert len(pods) == 3
    assert all(p["spec"]["containers"][0]["image"] == "img:1" for p in pods)


def test_mpi_runs_the_command_on_its_launcher_and_gives_the_image_where_the_runtime_gives_none() -> None:
    mpi = runtime(
        "mpi",
        framework={"name": "mpi"},
        replicaSpecs={
            "Launcher": {"template": {"spec": {"containers": [{"name": "mpi"}]}}},
            "Worker": {
                "replicas": 1,
                "template": {"spec": {"containers": [{"name": "mpi", "command": ["sshd"]}]}},
            },
        },
    )
    e = expand(
        job(
            {"name": "mpi"},
            trainer={"image": "i", "command": ["mpirun", "x"], "numNodes": 2, "procsPerNode": "4"},
        ),
        mpi,
    )
    assert main(e, "Launcher")["command"] == ["mpirun", "x"]
    assert main(e, "Worker")["command"] == ["sshd"]
    assert main(e, "Worker")["image"] == main(e, "Launcher")["image"] == "i"
    assert e.obj["spec"]["replicaSpecs"]["Worker"]["replicas"] == 2
    assert e.obj["spec"]["framework"]["options"] == {"slotsPerWorker": 4}
    assert expansion.needs(
        expansion.resolve_runtime(v1beta1.RuntimeRef(name="mpi"), None, expansion.from_documents([mpi]))
    ) == (
        "image",
        "command",
    )


def test_the_jobs_own_fields_override_the_runtime_field_by_field() -> None:
    e = expand(
        job(
            trainer={"image": "i"},
            runPolicy={"backoffLimit": 7},
            replicaSpecs={
                "Worker": {"template": {"spec": {"containers": [{"name": "pytorch", "workingDir": "/w"}]}}}
            },
        ),
        runtime(runPolicy={"backoffLimit": 1, "cleanPodPolicy": "All"}),
    )
    assert e.obj["spec"]["runPolicy"] == {"backoffLimit": 7, "cleanPodPolicy": "All"}
    assert main(e)["workingDir"] == "/w"
    assert main(e)["env"] == [{"name": "A", "value": "1"}]


def test_procs_per_node_is_refused_where_the_framework_has_no_such_setting() -> None:
    jax = runtime(
        "jax",
        framework={"name": "jax"},
        replicaSpecs={"Worker": {"template": {"spec": {"containers": [{"name": "jax"}]}}}},
    )
    with pytest.raises(validation.ValidationError) as e:
        expand(job({"name": "jax"}, trainer={"image": "i", "procsPerNode": "2"}), jax)
    assert (
        str(e.value)
        == "spec.trainer.procsPerNode: framework jax takes no processes-per-node setting, not '2'"
    )


def test_a_runtimes_accelerator_profile_equips_the_containers_that_request_it_and_the_users_env_wins() -> (
    None
):
    gpu = runtime(
        accelerators={
            "nvidia.com/gpu": {
                "env": {"LD_LIBRARY_PATH": "/nv/lib", "B": "runtime"},
                "volumes": [{"name": "nv", "hostPath": "/usr/nv", "mountPath": "/nv"}],
                "tolerations": [{"key": "gpu", "operator": "Exists"}],
            }
        }
    )
    e = expand(
        job(
            trainer={
                "image": "i",
                "env": [{"name": "B", "value": "mine"}],
                "resourcesPerNode": {"limits": {"nvidia.com/gpu": 1}},
            }
        ),
        gpu,
    )
    c = main(e)
    env = {v["name"]: v["value"] for v in c["env"]}
    assert env["B"] == "mine"
    assert env["LD_LIBRARY_PATH"] == "/nv/lib"
    assert c["volumeMounts"] == [{"name": "nv", "mountPath": "/nv", "readOnly": True}]
    pod = e.obj["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]
    assert pod["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert pod["volumes"] == [{"name": "nv", "hostPath": {"path": "/usr/nv"}}]
    plain = expand(job(trainer={"image": "i"}), gpu)
    assert "tolerations" not in plain.obj["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]


def test_an_elastic_runtime_or_one_that_names_its_host_names_is_not_given_per_job_names() -> None:
    per_replica = expand(job(trainer={"image": "i"}), runtime(network={"hostNames": "PerReplica"}))
    assert per_replica.obj["spec"]["network"] == {"hostNames": "PerReplica"}
    elastic = runtime(
        framework={"name": "pytorch", "pytorch": {"elastic": {"minReplicas": 1, "maxReplicas": 3}}}
    )
    assert "hostNames" not in expand(job(trainer={"image": "i"}), elastic).obj["spec"]["network"]


# --- the chain of runtimes ---------------------------------------------------------------------


def test_a_runtime_builds_on_another_and_overrides_it() -> None:
    base = runtime("base", runPolicy={"backoffLimit": 1})
    gpu = {**runtime("gpu"), "spec": {"runtimeRef": {"name": "base"}, "runPolicy": {"backoffLimit": 2}}}
    e = expand(job({"name": "gpu"}, trainer={"image": "i"}), base, gpu)
    assert e.obj["spec"]["runPolicy"] == {"backoffLimit": 2}
    assert [str(r) for r in e.runtime.refs] == ["ClusterTrainingRuntime gpu", "ClusterTrainingRuntime base"]


@pytest.mark.parametrize(
    ("ref", "runtimes", "message"),
    [
        ({"name": "nope"}, [], 'spec.runtimeRef: ClusterTrainingRuntime "nope" not found'),
        (
            {"kind": "TrainingRuntime", "name": "torch"},
            [],
            'spec.runtimeRef: TrainingRuntime "torch" not found in namespace ns',
        ),
        (
            {"kind": "TrainingRuntime", "name": "torch", "namespace": "other"},
            [],
            "spec.runtimeRef.namespace: a TrainingRuntime serves only its own namespace: a job names "
            "other/torch from namespace ns",
        ),
        (
            {"name": "torch", "namespace": "ns"},
            [],
            "spec.runtimeRef.namespace: a ClusterTrainingRuntime has no namespace (a job names "
            "ClusterTrainingRuntime torch)",
        ),
        (
            {"name": "a"},
            [
                {**runtime("a"), "spec": {"runtimeRef": {"name": "b"}}},
                {**runtime("b"), "spec": {"runtimeRef": {"name": "a"}}},
            ],
            "spec.runtimeRef: a loop of runtimes: ClusterTrainingRuntime a → ClusterTrainingRuntime b → "
            "ClusterTrainingRuntime a",
        ),
        (
            {"name": "a"},
            [{**runtime("a"), "spec": {"runtimeRef": {"kind": "TrainingRuntime", "name": "b"}}}],
            "spec.runtimeRef: ClusterTrainingRuntime a: a ClusterTrainingRuntime builds only on "
            "ClusterTrainingRuntimes, not TrainingRuntime b",
        ),
        (
            {"name": "a"},
            [{**runtime("a"), "spec": {"replicaSpecs": {"Worker": {"replicas": -1}}}}],
            "spec.runtimeRef: ClusterTrainingRuntime a: spec.replicaSpecs.Worker.replicas: must be at least 0, got -1",
        ),
    ],
)
def test_a_runtime_that_cannot_be_used_is_one_error_at_the_runtime_ref(
    ref: dict[str, Any], runtimes: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(expansion.Unresolved) as e:
        expansion.expand(job(ref), expansion.from_documents(runtimes))
    assert str(e.value).splitlines()[0] == message


def test_a_chain_longer_than_the_limit_is_refused() -> None:
    chain = [
        {**runtime(f"r{i}"), "spec": {"runtimeRef": {"name": f"r{i + 1}"}}}
        for i in range(expansion.MAX_DEPTH + 1)
    ]
    with pytest.raises(expansion.Unresolved, match="builds on more than 8 runtimes"):
        expansion.expand(job({"name": "r0"}), expansion.from_documents(chain))


# --- errors in their writer's terms ------------------------------------------------------------


def test_an_error_in_the_whole_job_is_said_in_the_terms_of_whoever_wrote_the_field() -> None:
    e = expand(job(trainer={"image": "i", "env": [{"name": "B", "value": "x"}]}))
    c = ("spec", "replicaSpecs", "Worker", "template", "spec", "containers", 0)
    by_job = e.explain(validation.FieldError(path=(*c, "image"), message="bad"))
    assert str(by_job) == "spec.trainer.image: bad"
    by_runtime = e.explain(validation.FieldError(path=(*c, "env", 0, "value"), message="bad"))
    assert str(by_runtime) == (
        "spec.runtimeRef: ClusterTrainingRuntime torch: "
        "spec.replicaSpecs.Worker.template.spec.containers[0].env[0].value: bad"
    )
    assert (
        str(e.explain(validation.FieldError(path=(*c, "env", 1), message="bad")))
        == "spec.trainer.env[0]: bad"
    )


def test_a_job_whose_merge_is_invalid_is_refused_by_intake_with_the_runtimes_field_named() -> None:
    bad = runtime(successPolicy={"targets": [{"replicaType": "Chief"}]})
    e = expand(job(trainer={"image": "i"}), bad)
    with pytest.raises(validation.ValidationError) as caught:
        intake.decode(e.obj)
    (error,) = [e.explain(err) for err in caught.value.errors]
    assert str(error) == (
        "spec.runtimeRef: ClusterTrainingRuntime torch: spec.successPolicy.targets[0]: no replica Chief in this job"
    )


def test_a_trainer_without_a_runtime_ref_is_refused() -> None:
    obj = job(trainer={"image": "i"})
    del obj["spec"]["runtimeRef"]
    obj["spec"]["framework"] = {"name": "pytorch"}
    obj["spec"]["replicaSpecs"] = runtime()["spec"]["replicaSpecs"]
    with pytest.raises(validation.ValidationError, match="trainer is given only with runtimeRef"):
        intake.decode(obj)


def test_an_image_nobody_gave_is_asked_of_the_trainer() -> None:
    e = expand(job(trainer={"command": ["python"]}))
    c = ("spec", "replicaSpecs", "Worker", "template", "spec", "containers", 0)
    missing = e.explain(validation.FieldError(path=(*c, "image"), message="Required value"))
    assert str(missing) == "spec.trainer.image: Required value"


@pytest.mark.parametrize(
    ("spec", "path", "message"),
    [
        ({"framework": "pytorch"}, "spec.framework", "expected object, got string"),
        ({"framework": {"pytorch": 3}}, "spec.framework.pytorch", "expected object, got integer"),
        ({"replicaSpecs": [{"replicas": 1}]}, "spec.replicaSpecs", "expected object, got array"),
        ({"replicaSpecs": {"Worker": 3}}, "spec.replicaSpecs.Worker", "expected object, got integer"),
        (
            {"replicaSpecs": {"Worker": {"template": 3}}},
            "spec.replicaSpecs.Worker.template",
            "expected object",
        ),
        (
            {
                "replicaSpecs": {
                    "Worker": {"template": {"spec": {"containers": [{"name": "pytorch", "env": "x"}]}}}
                }
            },
            "spec.replicaSpecs.Worker.template.spec.containers[0].env",
            "expected array, got string",
        ),
        (
            {"replicaSpecs": {"Worker": {"template": {"spec": {"containers": ["x"]}}}}},
            "spec.replicaSpecs.Worker.template.spec.containers[0]",
            "expected object, got string",
        ),
        (
            {"replicaSpecs": {"Worker": {"template": {"spec": {"tolerations": "x"}}}}},
            "spec.replicaSpecs.Worker.template.spec.tolerations",
            "expected array, got string",
        ),
        ({"network": []}, "spec.network", "expected object, got array"),
        (
            {"trainer": {"resourcesPerNode": {"limits": "x"}}},
            "spec.trainer.resourcesPerNode.limits",
            "expected a map of resource quantities, got string",
        ),
    ],
)
def test_a_jobs_own_field_of_the_wrong_type_is_refused_at_its_path_not_a_crash(
    spec: dict[str, Any], path: str, message: str
) -> None:
    # The mutating webhook expands a job before the CRD's schema checks it: any JSON may come.
    # (Found by the hostile-input generator: these were AttributeErrors and TypeErrors, a 500.)
    obj = job(
        **{
            "trainer": {
                "image": "i",
                "command": ["c"],
                "resourcesPerNode": {"limits": {"nvidia.com/gpu": 1}},
            },
            **spec,
        }
    )
    accelerated = runtime(
        accelerators={"nvidia.com/gpu": {"tolerations": [{"key": "g", "operator": "Exists"}]}}
    )
    with pytest.raises(validation.ValidationError) as refused:
        expansion.expand(obj, expansion.from_documents([accelerated]))
    assert any(
        validation.format_path(e.path) == path and message in e.message for e in refused.value.errors
    ), refused.value.errors


def test_a_runtimes_accelerator_profile_is_dry_run_in_a_job_that_requests_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The trial job of a runtime requests no accelerator, so a profile the apiserver refuses in a
    # pod (a toleration's operator) was admitted and only found by the first job asking for a GPU.
    # (Found by the hostile-input generator: a stored runtime whose short job was refused.)
    from kubetrain.operator.webhooks import dryrun, runtimes

    asked: list[Any] = []

    async def dry_run(_api: Any, job: Any, _fw: Any, _config: Any = None) -> dryrun.Verdict:
        asked.append(job)
        pod = job.spec.replica_specs["Worker"].template["spec"]
        bad = [i for i, t in enumerate(pod.get("tolerations", [])) if t.get("operator") == "Maybe"]
        path = ("spec", "replicaSpecs", "Worker", "template", "spec", "tolerations", *bad[:1], "operator")
        return dryrun.Verdict(
            errors=tuple(validation.FieldError(path=path, message="Unsupported value") for _ in bad)
        )

    class Api:
        def ungated(self, **_: Any) -> Api:
            return self

    monkeypatch.setattr(runtimes.dryrun, "check", dry_run)
    hook = runtimes.RuntimeAdmission(Api())  # type: ignore[arg-type]
    good = runtime(accelerators={"nvidia.com/gpu": {"tolerations": [{"key": "g", "operator": "Exists"}]}})
    assert asyncio.run(hook.check(good, None)) == ([], ())
    assert len(asked) == 2  # the trial job, and one requesting a GPU (with the toleration)
    assert asked[1].spec.replica_specs["Worker"].template["spec"]["tolerations"] == [
        {"key": "g", "operator": "Exists"}
    ]
    bad = runtime(accelerators={"nvidia.com/gpu": {"tolerations": [{"operator": "Maybe"}]}})
    (error,), _warnings = asyncio.run(hook.check(bad, None))
    assert validation.format_path(error.path) == "spec.accelerators"
    assert error.message.startswith("a job requesting nvidia.com/gpu: ")
    assert "tolerations[0].operator" in error.message
    asked.clear()
    assert asyncio.run(hook.check(runtime(), None)) == ([], ())
    assert len(asked) == 1  # no profile: one trial
