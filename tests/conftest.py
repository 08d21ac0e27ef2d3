"""Hypothesis profiles and the shared cluster fixtures.

`thorough` (the default for `make test`) runs 2,000 examples per property, the same ones on every
run: a red `make test` is then the change's, never a new random draw's. `explore` runs as many,
drawn afresh each time, to look for new counterexamples (`HYPOTHESIS_PROFILE=explore make test`;
a failure prints the steps to turn into a fixed test). `quick` runs 100.
"""

import os

from hypothesis import HealthCheck, settings

pytest_plugins = ["testkit.fixtures"]

_THOROUGH = {"max_examples": 2000, "deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("thorough", derandomize=True, **_THOROUGH)
settings.register_profile("explore", **_THOROUGH)
settings.register_profile("quick", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "thorough"))
