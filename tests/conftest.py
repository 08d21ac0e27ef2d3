"""Hypothesis profiles: `thorough` (the default for `make test`) runs thousands of examples."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "thorough", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("quick", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "thorough"))
