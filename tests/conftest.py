"""Hypothesis profiles and the shared cluster fixtures.

`thorough` (the default for `make test`) runs 2,000 examples per property; `quick` 100.
"""

import os

from hypothesis import HealthCheck, settings

pytest_plugins = ["testkit.fixtures"]

settings.register_profile(
    "thorough", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("quick", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "thorough"))
