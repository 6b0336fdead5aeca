"""How many inputs each fuzz test tries."""

from __future__ import annotations

import os


def examples(ci: int) -> int:
    """Inputs for one fuzz test: `ci` under make test, 20x that under make fuzz (FUZZ_EXAMPLES overrides)."""
    default = "20" if os.environ.get("HYPOTHESIS_PROFILE") == "fuzz" else "1"
    return max(1, int(ci * float(os.environ.get("FUZZ_EXAMPLES", default))))
