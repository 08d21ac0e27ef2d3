"""Group and version of the v1beta1 API: the hub, and the version stored in etcd."""

GROUP = "training.kubetrain.dev"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "TrainingJob"
PLURAL = "trainingjobs"
