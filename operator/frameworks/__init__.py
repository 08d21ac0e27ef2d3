"""The framework registry and the built-in frameworks.

``registry.BUILTINS`` holds ten, one module each except the two MPI flavours: ``tensorflow``,
``pytorch``, ``mxnet``, ``caffe2``, ``mpi`` and ``chainer`` (both in ``mpi``), ``jax``,
``xgboost``, ``paddle`` and ``generic`` (any replica types, each told only where it stands).

See ``framework`` for the contract a plugin fulfils and ``registry`` for how plugins
are found (the ``kubetrain.frameworks`` entry-point group).
"""

from kubetrain.operator.frameworks import framework, pytorch, registry, tensorflow

__all__ = ["framework", "pytorch", "registry", "tensorflow"]
