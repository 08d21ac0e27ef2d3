"""What a job created as v1beta1 is given where it leaves a field unset, and who is not given it.

The apiserver's side (config/defaults applied to a real kube-apiserver) is
tests/integration/test_admission_policy.py; here are the pure parts: :func:`on_create`, the
generated policy, `kubetrain render`, and the doors that must keep Kubeflow's host names.
"""

from __future__ import annotations

import pathlib

import attrs
import pytest
import yaml
from testkit.builders import a_job

from kubetrain.api import scheme, v1alpha1, v1beta1
from kubetrain.convert import document, kinds

from .test_cli import LEGACY, kubetrain

defaults = v1beta1.trainingjob_defaults
ROOT = pathlib.Path(__file__).resolve().parents[2]


def _with(job: v1beta1.TrainingJob, host_names: v1beta1.HostNames | None) -> v1beta1.TrainingJob:
    network = v1beta1.NetworkSpec(host_names=host_names)
    return attrs.evolve(job, spec=attrs.evolve(job.spec, network=network))


def test_a_new_job_that_leaves_host_names_unset_is_given_per_job_and_one_that_sets_them_keeps_them() -> None:
    job = a_job("j").framework("pytorch").replicas("Master", 1).replicas("Worker", 2).build()
    assert job.spec.network.host_names is None
    assert job.spec.network.hosts is v1beta1.HostNames.PER_REPLICA  # stored so, it keeps Kubeflow's
    assert defaults.on_create(job).spec.network.host_names is v1beta1.HostNames.PER_JOB
    for asked in v1beta1.HostNames:
        assert defaults.on_create(_with(job, asked)) == _with(job, asked)


def test_an_elastic_job_is_not_given_per_job() -> None:
    elastic = v1beta1.PyTorchOptions(elastic=v1beta1.ElasticPolicy(min_replicas=1, max_replicas=3))
    job = a_job("e").framework("pytorch", pytorch=elastic).replicas("Worker", 2).build()
    assert defaults.on_create(job) == job


def test_the_policy_asks_the_same_as_on_create_and_is_what_config_defaults_holds() -> None:
    policy, binding = defaults.admission_policy()
    spec = policy["spec"]
    conditions = {c["name"]: c["expression"] for c in spec["matchConditions"]}
    assert conditions["not-elastic"] == "!" + v1beta1.trainingjob_types.ELASTIC_CEL.replace(
        "self.", "object.spec."
    )
    assert "hostNames" in conditions["host-names-unset"]
    assert spec["matchConstraints"]["matchPolicy"] == "Exact"  # v1alpha1 requests keep Kubeflow's names
    assert spec["matchConstraints"]["resourceRules"][0]["operations"] == ["CREATE"]
    assert '"PerJob"' in spec["mutations"][0]["jsonPatch"]["expression"]
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert (ROOT / defaults.POLICY_PATH).read_text() == defaults.render()
    assert (
        "../defaults"
        in yaml.safe_load((ROOT / "config/operator/kustomization.yaml").read_text())["resources"]
    )


def test_render_gives_a_v1beta1_file_the_default_and_a_v1alpha1_file_kubeflows_names() -> None:
    job = scheme.encode(a_job("r").framework("pytorch").replicas("Master", 1).replicas("Worker", 1).build())
    beta = list(yaml.safe_load_all(kubetrain("render", "-", stdin=yaml.safe_dump(job)).stdout))
    assert [o["metadata"]["name"] for o in beta if o["kind"] == "Service"] == ["r"]
    alpha = list(yaml.safe_load_all(kubetrain("render", "-", stdin=LEGACY).stdout))
    assert len([o for o in alpha if o["kind"] == "Service"]) == 3


def test_a_v1alpha1_job_converts_with_kubeflows_host_names_written_out() -> None:
    alpha = scheme.decode(yaml.safe_load(LEGACY))
    assert isinstance(alpha, v1alpha1.TrainingJob)
    hub = scheme.to_hub(alpha)
    assert hub.spec.network.host_names is v1beta1.HostNames.PER_REPLICA
    assert scheme.encode(hub)["spec"]["network"] == {"hostNames": "PerReplica"}
    # A job stored without the field reads as v1alpha1 and back unchanged.
    unset = a_job("u").framework("pytorch").replicas("Master", 1).build()
    assert scheme.to_hub(v1alpha1.trainingjob_conversion.convert_from(unset)) == unset


def test_kubetrain_convert_writes_the_old_kinds_host_names_out() -> None:
    for sample in sorted((ROOT / "samples" / "legacy").glob("*.yaml")):
        for doc in yaml.safe_load_all(sample.read_text()):
            converted = document.convert(doc).job
            if converted is None:  # Kubeflow Trainer v2's: a runtime, or a job made from one
                continue
            assert converted.spec.network.host_names is v1beta1.HostNames.PER_REPLICA, sample.name


def test_a_per_job_job_is_not_written_back_as_an_old_kind_which_names_its_hosts_per_replica() -> None:
    plain = a_job("p").framework("pytorch").replicas("Master", 1).replicas("Worker", 2).build()
    chainer = a_job("c").framework("chainer").replicas("Master", 1).replicas("Worker", 1).build()
    for job, (api_version, kind) in (
        (plain, ("kubeflow.org/v1", "PyTorchJob")),
        (chainer, ("kubeflow.org/v1alpha1", "ChainerJob")),
    ):
        document.back(job, api_version, kind)  # unset, or Kubeflow's: written
        document.back(_with(job, v1beta1.HostNames.PER_REPLICA), api_version, kind)
        with pytest.raises(kinds.Inexpressible) as refused:
            document.back(_with(job, v1beta1.HostNames.PER_JOB), api_version, kind)
        assert [f.path for f in refused.value.errors] == [("spec", "network", "hostNames")], kind
