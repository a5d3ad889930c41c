"""The InPlacePodVerticalScalingSchedulerPreemption gate on and off under v1.37, for the
tests of the plugins' deferred-resize branches."""

from __future__ import annotations

from kpysched.config.features import Features
from kpysched.plugins._shared.resize import IN_PLACE_RESIZE_PREEMPTION_GATE

GATE_ON = Features(release=37, overrides={IN_PLACE_RESIZE_PREEMPTION_GATE: True})
GATE_OFF = Features(release=37)
