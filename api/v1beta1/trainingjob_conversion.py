"""v1beta1 is the conversion hub: every other version converts to and from it.

Like Kubebuilder's ``Hub()`` method, this module only marks the hub; the spokes hold
the conversion code (see ``kubetrain.api.v1alpha1.trainingjob_conversion``).
"""

from kubetrain.api import conversion
from kubetrain.api.v1beta1 import trainingjob_types

HUB = conversion.Hub(trainingjob_types.TrainingJob)
