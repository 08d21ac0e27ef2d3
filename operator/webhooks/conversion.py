"""The CRD conversion webhook (``apiextensions.k8s.io/v1`` ConversionReview).

Every object goes through :func:`kubetrain.api.scheme.convert_unstructured` — spoke to
hub to spoke, by the conversion registry — which changes nothing in metadata but labels
and annotations, as the apiserver requires. The response echoes the request's ``uid``
and returns the objects in the order they came. If one object cannot be converted, the
whole review fails with a message naming the object and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetrain.api import scheme, validation

__all__ = ["review"]

API_VERSION = "apiextensions.k8s.io/v1"


async def review(body: Mapping[str, Any]) -> dict[str, Any]:
    return convert(body)


def convert(body: Mapping[str, Any]) -> dict[str, Any]:
    request = body.get("request") or {}
    desired = str(request.get("desiredAPIVersion", ""))
    response: dict[str, Any] = {"uid": request.get("uid", "")}
    converted = []
    for obj in request.get("objects") or []:
        meta = obj.get("metadata") or {}
        try:
            converted.append(
                obj if obj.get("apiVersion") == desired else scheme.convert_unstructured(obj, desired)
            )
        except (validation.ValidationError, LookupError, ValueError) as e:
            where = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
            response["result"] = {
                "status": "Failure",
                "message": f"cannot convert TrainingJob {where} to {desired}: {e}",
            }
            return {"apiVersion": API_VERSION, "kind": "ConversionReview", "response": response}
    response["convertedObjects"] = converted
    response["result"] = {"status": "Success"}
    return {"apiVersion": API_VERSION, "kind": "ConversionReview", "response": response}
