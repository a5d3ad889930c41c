"""InPlacePodVerticalScalingSchedulerPreemption (v1.37, alpha, off) may be turned on, as
on kube-scheduler v1.37.2: it reaches the plugins and the queue through Features, is
written back among the gates set, puts DeferredPodScheduling before NodeResourcesFit in
the default profile, and is refused as unknown for v1.36."""

from __future__ import annotations

import pytest

from kpysched.config.features import IN_PLACE_RESIZE_PREEMPTION, Features
from kpysched.config.flags import FlagError, interpret
from kpysched.config.profiles import default_multi_point
from kpysched.config.settings import Settings
from kpysched.framework.deferred_resize import IN_PLACE_RESIZE_PREEMPTION_GATE

FLAG = f"--feature-gates={IN_PLACE_RESIZE_PREEMPTION}=true"


def test_the_framework_and_the_config_name_the_same_gate() -> None:
    assert IN_PLACE_RESIZE_PREEMPTION == IN_PLACE_RESIZE_PREEMPTION_GATE


def test_v1_37_takes_it_and_honours_it() -> None:
    invocation = interpret(["--emulated-version=1.37", FLAG])
    assert invocation.settings["feature_gates"] == {IN_PLACE_RESIZE_PREEMPTION: True}
    features = Settings(**invocation.settings).features
    assert features.release == 37
    assert features.enabled(IN_PLACE_RESIZE_PREEMPTION)
    assert features.gates() == {IN_PLACE_RESIZE_PREEMPTION: True}
    names = [name for name, _ in default_multi_point(features)]
    assert names.index("DeferredPodScheduling") + 1 == names.index("NodeResourcesFit")


def test_off_by_default() -> None:
    features = Features.from_gates({}, release=37)
    assert not features.enabled(IN_PLACE_RESIZE_PREEMPTION)
    assert "DeferredPodScheduling" not in [name for name, _ in default_multi_point(features)]


def test_v1_36_does_not_know_it() -> None:
    with pytest.raises(FlagError, match=IN_PLACE_RESIZE_PREEMPTION):
        interpret(["--emulated-version=1.36", FLAG])
