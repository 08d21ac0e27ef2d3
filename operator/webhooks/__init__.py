"""The manager's webhooks: CRD conversion, TrainingJob admission, runtimes.

``conversion`` answers ConversionReviews through the API's conversion registry;
``validating`` (the validating admission webhook) answers AdmissionReviews with what the CRD schema and its CEL rules cannot
check — a framework's own replica rules, fields that must not change, and (``dryrun``)
what the apiserver would say of the pods and Services the job renders; ``expanding`` (the
mutating admission webhook) expands a job made from a runtime when it is created, and
``runtimes`` checks runtimes when they are written.
:func:`register` mounts them on the webhook server, at the paths of
:mod:`~kubetrain.operator.webhook_endpoints`.
``certificates`` makes and injects a CA for clusters without cert-manager.
"""

from kubetrain.operator import accelerators
from kubetrain.operator.runtime import client, servers
from kubetrain.operator.webhook_endpoints import (
    CONVERT_PATH,
    EXPAND_PATH,
    VALIDATE_PATH,
    VALIDATE_RUNTIME_PATH,
)
from kubetrain.operator.webhooks import certificates, conversion, dryrun, expanding, runtimes, validating

__all__ = [
    "certificates",
    "conversion",
    "dryrun",
    "expanding",
    "register",
    "runtimes",
    "validating",
]


def register(
    server: servers.WebhookServer, api: client.Client, accelerator_config: accelerators.Config | None = None
) -> None:
    """Serve every webhook on ``server``; admission reads runtimes and dry-runs pods through ``api``."""
    server.register(CONVERT_PATH, conversion.review)
    server.register(VALIDATE_PATH, validating.Admission(api, accelerator_config=accelerator_config).review)
    server.register(EXPAND_PATH, expanding.Expansion(api, accelerator_config=accelerator_config).review)
    server.register(
        VALIDATE_RUNTIME_PATH, runtimes.RuntimeAdmission(api, accelerator_config=accelerator_config).review
    )
