"""v1.37's gates that hang on GenericWorkload and are off by default (the alpha
PodGroupPreemptionPolicy and TopologyAwareWorkloadScheduling, the beta
DRAWorkloadResourceClaims): taken with GenericWorkload on v1.37, refused without it in
upstream's words, and refused on v1.36 (which has no such gate, or, for
DRAWorkloadResourceClaims, an alpha one kpysched does not follow). Each gate's own
behaviour is tested beside its module."""

from __future__ import annotations

import pytest

from kpysched.config.features import Features
from kpysched.config.flags import FlagError, interpret
from kpysched.config.flags.feature_gates import check_gates
from kpysched.config.settings import Settings

GATES = ("PodGroupPreemptionPolicy", "TopologyAwareWorkloadScheduling",
         "DRAWorkloadResourceClaims")


@pytest.mark.parametrize("gate", GATES)
def test_v1_37_takes_it_with_generic_workload(gate: str) -> None:
    invocation = interpret(["--emulated-version=1.37",
                            f"--feature-gates=GenericWorkload=true,{gate}=true"])
    features = Settings(**invocation.settings).features
    assert features.enabled(gate)
    assert features.gates() == {"GenericWorkload": True, gate: True}


@pytest.mark.parametrize("gate", GATES)
def test_it_depends_on_generic_workload_in_upstream_words(gate: str) -> None:
    assert check_gates({gate: "true"}, 37) == [
        f"{gate} is enabled, but depends on features that are disabled: [GenericWorkload]"]


@pytest.mark.parametrize("gate", GATES)
def test_off_by_default(gate: str) -> None:
    assert not Features.from_gates({"GenericWorkload": True}, release=37).enabled(gate)


@pytest.mark.parametrize("gate", GATES)
def test_v1_36_refuses_it(gate: str) -> None:
    with pytest.raises(FlagError, match=gate):
        interpret(["--emulated-version=1.36", "--feature-gates=GenericWorkload=true,"
                   f"GangScheduling=true,{gate}=true"])


# CompositePodGroup hangs on two gates.
COMPOSITE = "CompositePodGroup"
COMPOSITE_NEEDS = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"


def test_v1_37_takes_composite_pod_group_with_both_dependencies() -> None:
    invocation = interpret(["--emulated-version=1.37",
                            f"--feature-gates={COMPOSITE_NEEDS},{COMPOSITE}=true"])
    features = Settings(**invocation.settings).features
    assert features.enabled(COMPOSITE)
    assert features.gates() == {"GenericWorkload": True,
                                "TopologyAwareWorkloadScheduling": True, COMPOSITE: True}


@pytest.mark.parametrize(("others", "missing"), [
    ({}, "GenericWorkload TopologyAwareWorkloadScheduling"),
    ({"GenericWorkload": "true"}, "TopologyAwareWorkloadScheduling"),
])
def test_composite_pod_group_depends_on_both_in_upstream_words(
        others: dict[str, str], missing: str) -> None:
    assert check_gates({**others, COMPOSITE: "true"}, 37) == [
        f"{COMPOSITE} is enabled, but depends on features that are disabled: [{missing}]"]


def test_composite_pod_group_off_by_default() -> None:
    assert not Features.from_gates({"GenericWorkload": True,
                                    "TopologyAwareWorkloadScheduling": True},
                                   release=37).enabled(COMPOSITE)


def test_v1_36_refuses_composite_pod_group() -> None:
    with pytest.raises(FlagError, match=COMPOSITE):
        interpret(["--emulated-version=1.36", "--feature-gates=GenericWorkload=true,"
                   f"GangScheduling=true,{COMPOSITE}=true"])
