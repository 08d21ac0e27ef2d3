"""kubetrain's operator: one generic reconciler for every training framework.

Modules: ``trainingjob_controller`` (the reconciler: caches in, one status write, creates
and deletes out), ``lifecycle`` (one pure step of a job's life) built from ``policies``
(classify, failure, budget, backoff, success, deadline, ttl, cleanup) and ``conditions``; ``frameworks`` (the registry and its
plugins), ``render`` (the pure function from a job to its ConfigMap, Secret, Services
and Pods; names and labels are :mod:`kubetrain.api.naming`), ``accelerators`` (operator-wide env and volumes
per device), ``webhooks`` (conversion, admission, self-signed certificates),
``migration`` (storage-version migration), ``runtime`` (informers, work queue,
controllers, leader election, servers, tracing — a compact controller-runtime),
``devcluster`` (the local control plane and the kustomize deployment on it) and ``main``
(the ``kubetrain-operator`` process). The ``kubetrain`` command is :mod:`kubetrain.cli`.
"""

__all__: list[str] = []
