"""kubetrain's operator: one generic reconciler for every training framework.

Modules: ``trainingjob_controller`` (the reconciler: caches in, one status write, creates
and deletes out), ``lifecycle`` (one pure step of a job's life) built from ``policies``
(classify, failure, budget, backoff, success, deadline, ttl, cleanup) and ``conditions``; ``frameworks`` (the registry and its
plugins), ``render`` (the pure function from a job to its ConfigMap, Secret, Services
and Pods; names and labels are :mod:`kubetrain.api.naming`), ``accelerators`` (operator-wide env and volumes
per device), ``intake`` (a job decoded, its framework found and that framework's rules
applied — what admission, the reconciler, the CLI and the converter all check),
``resources`` (an API resource, as a plain value), ``webhooks`` (conversion, admission,
self-signed certificates), ``runtime`` (informers, work queue, controllers, leader election,
servers, tracing — a compact controller-runtime) and ``main`` (the ``kubetrain-operator``
process). The ``kubetrain`` command is :mod:`kubetrain.cli`; the local cluster
:mod:`kubetrain.devcluster`.

The pure parts — ``frameworks``, ``intake``, ``render``, ``scheduling``, ``policies``,
``lifecycle``, ``conditions``, ``tensorboard``, ``resources`` — import only the API and one
another, never the runtime, the webhooks or the reconciler: the CLI and the converter use them
without loading those (``tests/unit/test_import_layers.py`` holds the table).
"""

__all__: list[str] = []
