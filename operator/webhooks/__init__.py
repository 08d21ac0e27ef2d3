"""The manager's webhooks: CRD conversion and TrainingJob admission.

``conversion`` answers ConversionReviews through the API's conversion registry;
``admission`` answers AdmissionReviews with what the CRD schema and its CEL rules cannot
check — a framework's own replica rules, fields that must not change, and (``dryrun``)
what the apiserver would say of the pods and Services the job renders.
:func:`register` mounts them on the webhook server.
``certificates`` makes and injects a CA for clusters without cert-manager.
"""

from kubetrain.operator import accelerators
from kubetrain.operator.runtime import client, servers
from kubetrain.operator.webhooks import admission, certificates, conversion, dryrun

__all__ = [
    "CONFIGURATION_NAME",
    "CONVERT_PATH",
    "VALIDATE_PATH",
    "admission",
    "certificates",
    "conversion",
    "dryrun",
    "register",
]

# The ValidatingWebhookConfiguration, as config/default names it.
CONFIGURATION_NAME = "kubetrain-validating-webhook-configuration"
CONVERT_PATH = "/convert"
VALIDATE_PATH = "/validate-training-kubetrain-dev-v1beta1-trainingjob"


def register(
    server: servers.WebhookServer, api: client.Client, accelerator_config: accelerators.Config | None = None
) -> None:
    """Serve both webhooks on ``server``; admission dry-runs pods through ``api``."""
    server.register(CONVERT_PATH, conversion.review)
    server.register(VALIDATE_PATH, admission.Admission(api, accelerator_config=accelerator_config).review)
