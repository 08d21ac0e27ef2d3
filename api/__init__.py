"""kubetrain's API: the TrainingJob kind of group training.kubetrain.dev.

Two versions are served. ``v1beta1`` is the hub and storage version; ``v1alpha1`` keeps
the list-shaped spec of the first per-framework operators and converts losslessly to
and from the hub. The values are frozen attrs classes: build them in code, or decode
wire data with :func:`scheme.decode`, which reports every problem with its path.

Modules: ``schema`` (field constraints shared by Python and the CRD), ``wire`` (the
camelCase codec), ``validation`` (errors), ``conversion`` (hub and spokes),
``scheme`` (the versions of TrainingJob), ``crd`` (the generated CRD).
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
