"""Webhook certificates without cert-manager: ``kubetrain-operator --webhook-self-signed``.

For local runs and clusters without cert-manager, the manager makes a CA and a serving
certificate for the given host names (the webhook Service's DNS names by default) in its
certificate directory, then writes that CA into the ``caBundle`` of the CRD's conversion
webhook and of every webhook in the ValidatingWebhookConfiguration — what cert-manager's
CA injector does otherwise. Each start makes a new CA, so run one replica in this mode.
"""

from __future__ import annotations

import base64
import pathlib
from collections.abc import Sequence
from typing import Any

from kubetrain.api import crd
from kubetrain.operator import pki
from kubetrain.operator.runtime import client

__all__ = ["inject", "write"]


def write(cert_dir: pathlib.Path, hosts: Sequence[str]) -> bytes:
    """A new CA and a serving certificate for ``hosts`` in ``cert_dir``; the CA's PEM."""
    ca = pki.new_ca("kubetrain-webhook-ca")
    serving = pki.issue(ca, "kubetrain-webhook", hosts=tuple(hosts), server=True)
    cert_dir.mkdir(parents=True, exist_ok=True)
    (cert_dir / "tls.key").write_bytes(serving.key_pem)
    (cert_dir / "tls.crt").write_bytes(serving.cert_pem)
    return ca.cert_pem


async def inject(
    api: client.Client, ca_pem: bytes, webhook_configuration: str, mutating_configuration: str
) -> None:
    """Put the CA into the CRD's conversion webhook and the validating and mutating webhooks."""
    bundle = base64.b64encode(ca_pem).decode("ascii")
    definition: dict[str, Any] = await api.get(client.CRDS, crd.NAME)
    if (definition["spec"].get("conversion") or {}).get("strategy") == "Webhook":
        patch = {"spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": bundle}}}}}
        await api.merge_patch(client.CRDS, crd.NAME, patch)
    for resource, name in (
        (client.VALIDATING_WEBHOOK_CONFIGURATIONS, webhook_configuration),
        (client.MUTATING_WEBHOOK_CONFIGURATIONS, mutating_configuration),
    ):
        config: dict[str, Any] = await api.get(resource, name)
        webhooks = config.get("webhooks") or []
        for webhook in webhooks:
            webhook["clientConfig"]["caBundle"] = bundle
        await api.merge_patch(
            resource,
            name,
            {"metadata": {"resourceVersion": config["metadata"]["resourceVersion"]}, "webhooks": webhooks},
        )
