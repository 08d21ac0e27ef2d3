"""The v1beta1 replica: a set of identical pods, how many, how they restart, and their template.

A job holds up to :data:`MAX_REPLICA_TYPES` of them, keyed by a replica type of letters and digits
(:data:`REPLICA_TYPE`: no hyphen, so that a generated pod name maps back to one job, type and
index). The template stays free-form JSON to the CRD (:data:`POD_TEMPLATE_SCHEMA` asks only for
containers with names); :func:`check_template` checks the rest the API promises.
"""

import enum
from collections.abc import Mapping
from typing import Annotated, Any

import attrs

from kubetrain.api import podtemplate, schema, validation

REPLICA_TYPE = r"^[A-Za-z][A-Za-z0-9]*$"
MAX_REPLICA_TYPES = 16


class RestartPolicy(enum.StrEnum):
    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    NEVER = "Never"
    EXIT_CODE = "ExitCode"


POD_TEMPLATE_SCHEMA = {
    "x-kubernetes-preserve-unknown-fields": True,
    "required": ["spec"],
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "required": ["containers"],
            "properties": {
                "containers": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                        "required": ["name"],
                        "properties": {"name": {"type": "string"}},
                    },
                }
            },
        }
    },
}


def check_template(_instance: Any, _attribute: Any, template: Mapping[str, Any]) -> None:
    found = podtemplate.errors(template)
    if found:
        raise validation.ValidationError(found)


@attrs.frozen(kw_only=True, field_transformer=schema.validated)
class ReplicaSpec:
    """A set of identical replicas: how many, how they restart, and their pod template."""

    replicas: Annotated[int, schema.Field(minimum=0, maximum=10000, doc="Number of replicas.")] = 1
    restart_policy: Annotated[
        RestartPolicy | None,
        schema.Field(doc="Always, OnFailure, Never or ExitCode; defaults to the framework's."),
    ] = None
    port: Annotated[
        int | None,
        schema.Field(minimum=1, maximum=65535, doc="The framework's port; defaults to the framework's."),
    ] = None
    template: Annotated[
        schema.JSONObject,
        schema.Field(
            doc="The pod template (PodTemplateSpec) of every replica.", extra_schema=POD_TEMPLATE_SCHEMA
        ),
    ] = attrs.field(validator=check_template)
