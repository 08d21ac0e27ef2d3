"""The manager's webhooks: CRD conversion and TrainingJob admission.

``conversion`` answers ConversionReviews through the API's conversion registry;
``admission`` answers AdmissionReviews with what the CRD schema and its CEL rules cannot
check — a framework's own replica rules and fields that must not change. Both are pure
functions of the review; :func:`register` mounts them on the webhook server.
``certificates`` makes and injects a CA for clusters without cert-manager.
"""

from kubetrain.operator.runtime import servers
from kubetrain.operator.webhooks import admission, certificates, conversion

__all__ = [
    "CONFIGURATION_NAME",
    "CONVERT_PATH",
    "VALIDATE_PATH",
    "admission",
    "certificates",
    "conversion",
    "register",
]

# The ValidatingWebhookConfiguration, as config/default names it.
CONFIGURATION_NAME = "kubetrain-validating-webhook-configuration"
CONVERT_PATH = "/convert"
VALIDATE_PATH = "/validate-training-kubetrain-dev-v1beta1-trainingjob"


def register(server: servers.WebhookServer) -> None:
    """Serve both webhooks on ``server``."""
    server.register(CONVERT_PATH, conversion.review)
    server.register(VALIDATE_PATH, admission.review)
