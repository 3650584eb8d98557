"""How many examples a property test draws, by Hypothesis profile.

``make test`` loads the ``ci`` profile: every property test draws a quarter of the
examples its author named (at least 25), sized for two cores. One setting runs them at
full depth or deeper: ``TIDEGATE_HYPOTHESIS_PROFILE=full`` (as written) or ``deep`` (ten
times as written), e.g. before a release or after touching a matcher.

No profile has a deadline or the too-slow health check: both are timings, and the suite
must pass on a loaded machine (a busy CI host ran property tests past the default 200 ms
deadline, which Hypothesis reports as a failure, or as Flaky when the replay is quicker).
Whether something is fast enough is for bench/, not a test.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

SCALE = {"ci": 0.25, "full": 1.0, "deep": 10.0}
PROFILE = os.environ.get("TIDEGATE_HYPOTHESIS_PROFILE", "ci")

if PROFILE not in SCALE:
    raise RuntimeError(f"TIDEGATE_HYPOTHESIS_PROFILE must be one of {sorted(SCALE)}")

for _name, _scale in SCALE.items():
    settings.register_profile(
        _name,
        max_examples=max(25, int(100 * _scale)),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
settings.load_profile(PROFILE)


def examples(written: int) -> int:
    """The examples to draw for a test whose author asked for ``written``."""
    return max(min(written, 25), int(written * SCALE[PROFILE]))
