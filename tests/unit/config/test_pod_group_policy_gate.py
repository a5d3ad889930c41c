"""PodGroupPreemptionPolicy (v1.37, alpha, off) may be turned on with GenericWorkload, as
on kube-scheduler v1.37.2 (it depends on GenericWorkload there too); v1.36 does not
know it."""

from __future__ import annotations

import pytest

from kpysched.config.features import POD_GROUP_PREEMPTION_POLICY, Features
from kpysched.config.flags import FlagError, interpret
from kpysched.config.flags.feature_gates import check_gates
from kpysched.config.settings import Settings
from kpysched.scheduling.pod_group_policy import GATE


def test_the_config_and_the_scheduling_core_name_the_same_gate() -> None:
    assert POD_GROUP_PREEMPTION_POLICY == GATE


def test_v1_37_takes_it_with_generic_workload() -> None:
    invocation = interpret(["--emulated-version=1.37",
                            f"--feature-gates=GenericWorkload=true,{GATE}=true"])
    features = Settings(**invocation.settings).features
    assert features.enabled(GATE)
    assert features.gates() == {"GenericWorkload": True, GATE: True}


def test_it_depends_on_generic_workload_in_upstream_words() -> None:
    assert check_gates({GATE: "true"}, 37) == [
        f"{GATE} is enabled, but depends on features that are disabled: [GenericWorkload]"]


def test_off_by_default() -> None:
    assert not Features.from_gates({"GenericWorkload": True}, release=37).enabled(GATE)


def test_v1_36_does_not_know_it() -> None:
    with pytest.raises(FlagError, match=GATE):
        interpret(["--emulated-version=1.36", f"--feature-gates={GATE}=true"])
