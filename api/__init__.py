"""kubetrain's API: the TrainingJob kind of group training.kubetrain.dev.

Two versions are served. ``v1beta1`` is the hub and storage version; ``v1alpha1`` keeps
the list-shaped spec of the first per-framework operators and converts losslessly to
and from the hub. The values are frozen attrs classes: build them in code, or decode
wire data with :func:`scheme.decode`, which reports every problem with its path.

Modules: ``schema`` (field constraints shared by Python and the CRD), ``wire`` (the
camelCase codec), ``validation`` (errors), ``conversion`` (hub and spokes),
``scheme`` (the versions of TrainingJob), ``crd`` (the generated CRD).

What every package shares lives here too, so that the operator, the client, the CLI and the
converter agree without importing one another: ``naming`` (the names, labels and host names of
a job's objects), ``observed`` (a pod as kubetrain reads it) and ``documents`` (YAML files read
with the line of every field).
"""

from kubetrain.api import conversion, meta, schema, scheme, v1alpha1, v1beta1, validation, wire
from kubetrain.api.validation import ValidationError

__all__ = [
    "ValidationError",
    "conversion",
    "meta",
    "schema",
    "scheme",
    "v1alpha1",
    "v1beta1",
    "validation",
    "wire",
]
