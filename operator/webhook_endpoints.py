"""Where the apiserver reaches the manager's webhooks, as ``config/default`` deploys them.

The names the manager serves and injects its CA under (:mod:`kubetrain.operator.webhooks`) and
the dev cluster points and patches (:mod:`kubetrain.devcluster.deploy`): the
Validating and Mutating WebhookConfigurations, the Service in front of the manager, and the
paths it answers on. Plain values apart from the webhooks, so that ``kubetrain dev`` loads neither them
nor the runtime and aiohttp they serve with.
"""

__all__ = [
    "CONFIGURATION_NAME",
    "CONVERT_PATH",
    "EXPAND_PATH",
    "MUTATING_CONFIGURATION_NAME",
    "SERVICE",
    "VALIDATE_PATH",
    "VALIDATE_RUNTIME_PATH",
]

# The ValidatingWebhookConfiguration and the webhook Service, as config/default names them
# (config/webhook's names with the overlay's "kubetrain-" prefix).
CONFIGURATION_NAME = "kubetrain-validating-webhook-configuration"
MUTATING_CONFIGURATION_NAME = "kubetrain-mutating-webhook-configuration"
SERVICE = "kubetrain-webhook-service"
# The CRD's conversion webhook (config/crd/patches) and the admission webhooks (config/webhook):
# a job's, a job made from a runtime expanded at creation, and the runtimes'.
CONVERT_PATH = "/convert"
VALIDATE_PATH = "/validate-training-kubetrain-dev-v1beta1-trainingjob"
EXPAND_PATH = "/mutate-training-kubetrain-dev-v1beta1-trainingjob"
VALIDATE_RUNTIME_PATH = "/validate-training-kubetrain-dev-v1beta1-trainingruntime"
