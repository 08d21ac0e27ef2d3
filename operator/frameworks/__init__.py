"""The framework registry and the built-in frameworks (TensorFlow, PyTorch).

See ``framework`` for the contract a plugin fulfils and ``registry`` for how plugins
are found (the ``kubetrain.frameworks`` entry-point group).
"""

from kubetrain.operator.frameworks import framework, pytorch, registry, tensorflow

__all__ = ["framework", "pytorch", "registry", "tensorflow"]
