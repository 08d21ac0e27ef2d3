"""kubetrain's operator: one generic reconciler for every training framework.

Modules: ``runtime`` (informers, work queue, controllers, leader election, servers,
tracing — a compact controller-runtime), ``frameworks`` (the registry and its plugins),
``render`` (the pure function from a job to its Pods, Services and ConfigMaps),
``naming`` (names and labels of those objects), ``devcluster`` (the local control
plane), ``main`` (the ``kubetrain-operator`` process) and ``cli`` (the ``kubetrain``
command).
"""

__all__: list[str] = []
