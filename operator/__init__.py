"""kubetrain's operator: one generic reconciler for every training framework.

Modules: ``frameworks`` (the registry and its plugins), ``render`` (the pure function
from a job to its Pods, Services and ConfigMaps), ``naming`` (names and labels of
those objects), ``cli`` (the ``kubetrain`` command).
"""

__all__: list[str] = []
