"""Group and version of the v1beta1 API: the hub, and the version stored in etcd."""

from kubetrain.api.naming import GROUP, KIND, PLURAL

__all__ = ["API_VERSION", "GROUP", "KIND", "PLURAL", "VERSION"]

VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
