"""Profiles for the fuzz suite (hypothesis).

The default profile `ci` is seeded (derandomized), so `make test` runs the same inputs every time
and stays fast. `make fuzz` selects `fuzz` (HYPOTHESIS_PROFILE=fuzz): many more inputs, with the
seed printed by hypothesis so a failure can be replayed with `--hypothesis-seed`.

budget.examples(n) gives each test its number of inputs (FUZZ_EXAMPLES scales it).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile("ci", derandomize=True, deadline=None, suppress_health_check=_SUPPRESS, database=None)
settings.register_profile(
    "fuzz", derandomize=False, deadline=None, suppress_health_check=_SUPPRESS, database=None, print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

