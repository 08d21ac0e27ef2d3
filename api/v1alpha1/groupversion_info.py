"""Group and version of the legacy v1alpha1 API, shaped like the first operators."""

GROUP = "training.kubetrain.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "TrainingJob"
