"""What a TrainingJob created as v1beta1 is given, once, where it leaves a field unset.

A default in the CRD's schema is applied whenever an object is read, to jobs stored long ago as
much as to new ones. A default that should differ from what stored jobs have meant must instead be
given once, when the job is created, and written into it. There is one such default:
``spec.network.hostNames: PerJob``. One headless Service per job instead of one per pod is lighter
on the apiserver and DNS, and kube-scheduler then lays out the job's pods by their spread
constraint without matching each against the namespace's Services (docs/performance.md). A job
stored without the field keeps ``PerReplica`` (:attr:`NetworkSpec.hosts`): its running pods
already know their peers by those names.

Not given to:

- an elastic job: torchrun's rendezvous needs the short per-replica names;
- a job made from a runtime (``spec.runtimeRef``): the runtime may say its own host names, so
  the expansion (``kubetrain.operator.expansion``) gives the default after merging the runtime;
- a job created as v1alpha1 (the policy matches v1beta1 requests only, ``matchPolicy: Exact``):
  its conversion writes ``PerReplica`` out, as ``kubetrain convert`` does for every old kind —
  Kubeflow's jobs keep Kubeflow's names.

The apiserver gives it through a MutatingAdmissionPolicy (GA in Kubernetes 1.36). It lives in
``config/defaults`` and is generated from here by ``kubetrain manifests``. So it holds at every
door (kubectl, the Python client, ``kubetrain submit``), whether the operator runs or not.
``kubetrain render`` gives a file the same with :func:`on_create`. For some seconds after the CRD
is first installed the apiserver answers such a create 503 ("Resource kind ... not found. There
can be a delay ..."): the policy learns a new kind's schema from ``/openapi/v3``, polled every 5 s.
"""

from __future__ import annotations

from typing import Any

import attrs
import yaml

from kubetrain.api.v1beta1 import groupversion_info as gv
from kubetrain.api.v1beta1 import trainingjob_types as types

__all__ = ["HOST_NAMES", "POLICY_NAME", "POLICY_PATH", "admission_policy", "on_create", "render"]

POLICY_PATH = "config/defaults/trainingjob_defaults.yaml"
POLICY_NAME = "trainingjob-defaults"
HOST_NAMES = types.HostNames.PER_JOB

# The same tests as the CRD's CEL rules, on the admitted object instead of its spec.
_UNSET = "!(has(object.spec.network) && has(object.spec.network.hostNames))"
_NOT_ELASTIC = "!" + types.ELASTIC_CEL.replace("self.", "object.spec.")
_PATCH = (
    f'has(object.spec.network) ? [JSONPatch{{op: "add", path: "/spec/network/hostNames", value: "{HOST_NAMES}"}}]'
    f' : [JSONPatch{{op: "add", path: "/spec/network", value: {{"hostNames": "{HOST_NAMES}"}}}}]'
)


def on_create(job: types.TrainingJob) -> types.TrainingJob:
    """``job`` as the apiserver stores it when it is created as v1beta1 (see the module)."""
    spec = job.spec
    if spec.network.host_names is not None or spec.framework.elastic is not None:
        return job
    network = attrs.evolve(spec.network, host_names=HOST_NAMES)
    return attrs.evolve(job, spec=attrs.evolve(spec, network=network))


def admission_policy() -> list[dict[str, Any]]:
    """The MutatingAdmissionPolicy that gives :func:`on_create`'s default, and its binding."""
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": POLICY_NAME},
        "spec": {
            "matchConstraints": {
                "matchPolicy": "Exact",
                "resourceRules": [
                    {
                        "apiGroups": [gv.GROUP],
                        "apiVersions": [gv.VERSION],
                        "operations": ["CREATE"],
                        "resources": [gv.PLURAL],
                    }
                ],
            },
            "matchConditions": [
                # False (the policy skipped) before the others are evaluated into an error: a job
                # without a framework is the schema's to refuse, with the field named.
                {"name": "has-framework", "expression": "has(object.spec) && has(object.spec.framework)"},
                {"name": "host-names-unset", "expression": _UNSET},
                {"name": "not-elastic", "expression": _NOT_ELASTIC},
                # A job made from a runtime is given it by its expansion, after the runtime's
                # network: given here first, it would hide the runtime's.
                {"name": "not-from-a-runtime", "expression": "!has(object.spec.runtimeRef)"},
            ],
            # A JSON patch: an apply configuration would first convert the whole object to its
            # typed form, and a mistyped field anywhere would then be refused by this policy
            # instead of by the schema, which names the field and what it must be.
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": _PATCH}}],
            "failurePolicy": "Fail",
            "reinvocationPolicy": "Never",
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": POLICY_NAME},
        "spec": {"policyName": POLICY_NAME},
    }
    return [policy, binding]


def render() -> str:
    """The policy and its binding as the YAML file checked in at :data:`POLICY_PATH`."""
    header = "# Generated by `kubetrain manifests` from api/v1beta1/trainingjob_defaults.py. Do not edit.\n"
    return header + yaml.safe_dump_all(admission_policy(), sort_keys=False, width=100)
