"""A step change in one group's TPR is caught within the nights the Markov chain predicts.

From night 46, race r2's true positive rate falls by min_change (0.05); its equal-opportunity stream
(r2 vs r0) must alert, with the median delay over the monitors equal to the chain's predicted median.
"""

from __future__ import annotations

import numpy as np
import pytest
from drift_sim import MIN_CHANGE, SIM, changed_monitors

from fairgate.monitoring import cusum
from fairgate.monitoring.drift import scan

MONITORS = 30


@pytest.mark.slow
def test_step_change_is_detected_within_the_predicted_delay() -> None:
    rules = SIM.rules(MIN_CHANGE, 0.05)
    after = SIM.NIGHTS - SIM.CHANGE_NIGHT
    delays, predicted = [], []
    for monitor in changed_monitors(MONITORS):
        result = scan(monitor.history, rules)  # type: ignore[attr-defined]
        delays.append(SIM.delay_of(result, SIM.CHANGED_STREAM))
        stream = next(s for s in result.streams if s.stream == SIM.CHANGED_STREAM)
        shift = MIN_CHANGE / SIM.typical_se(stream)
        predicted.append(cusum.delay(stream.threshold, stream.k, shift, after, stream.baseline_share))
    medians = np.array([p[0] for p in predicted])
    within = float(np.mean([p[1] for p in predicted]))
    found = np.array([d for d in delays if d is not None], dtype=float)
    # Detected in (nearly) every monitor: the chain predicts ~99% within the 45 changed nights.
    assert found.size >= MONITORS * min(within, 1.0) - 3
    # The median of 30 delays has a sampling SD of about one night (IQR ~6 nights); the CUSUM is not always at
    # 0 when the change comes (a head start, or a lower excursion to climb out of): 3 nights of tolerance.
    assert abs(np.median(found) - np.median(medians)) <= 3
    # The prediction itself is a delay shorter than the 45 changed nights (else the check above says little).
    assert np.median(medians) < after / 2
