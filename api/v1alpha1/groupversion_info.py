"""Group and version of the legacy v1alpha1 API, shaped like the first operators."""

from kubetrain.api.naming import GROUP, KIND, PLURAL

__all__ = ["API_VERSION", "GROUP", "KIND", "PLURAL", "VERSION"]

VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
