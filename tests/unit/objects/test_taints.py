"""tolerates / find_untolerated_taint, with upstream's ToleratesTaint table
(k8s.io/api core/v1 toleration_test.go; TaintTolerationComparisonOperators is alpha and off)."""

from __future__ import annotations

import pytest

from kpysched.objects import api
from kpysched.objects.taints import find_untolerated_taint, tolerates


def toleration(key: str = "", operator: str = "", value: str = "",
               effect: str = "") -> api.Toleration:
    return api.Toleration(key=key, operator=operator, value=value, effect=effect)


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> api.Taint:
    return api.Taint(key=key, value=value, effect=effect)


@pytest.mark.parametrize(("tol", "tnt", "tolerated"), [
    pytest.param(toleration("foo", "Exists", effect="NoSchedule"), taint("foo"), True,
                 id="same key and effect, Exists, taint has no value"),
    pytest.param(toleration("foo", "Exists", effect="NoSchedule"), taint("foo", "bar"), True,
                 id="same key and effect, Exists, taint has some value"),
    pytest.param(toleration("", "Exists", effect="NoSchedule"), taint("foo", "bar"), True,
                 id="empty key with Exists matches all taints of the effect"),
    pytest.param(toleration("foo", "Equal", "bar", "NoSchedule"), taint("foo", "bar"), True,
                 id="same key, effect and value, Equal"),
    pytest.param(toleration("foo", "Equal", "value1", "NoSchedule"), taint("foo", "value2"),
                 False, id="different values, Equal"),
    pytest.param(toleration("foo", "Equal", "bar", "NoExecute"), taint("foo", "bar"), False,
                 id="different effects"),
    pytest.param(toleration("foo", "", "bar", "NoSchedule"), taint("foo", "bar"), True,
                 id="empty operator means Equal"),
    pytest.param(toleration("foo", "Exists"), taint("foo", effect="NoExecute"), True,
                 id="empty effect matches every effect"),
    pytest.param(toleration("", "Exists"), taint("anything", "x", "PreferNoSchedule"), True,
                 id="empty key and effect with Exists tolerates everything"),
    pytest.param(toleration("other", "Exists"), taint("foo"), False, id="different key"),
    pytest.param(toleration("foo", "Gt", "1", "NoSchedule"), taint("foo", "5"), False,
                 id="Gt is not honoured while the comparison feature gate is off"),
    pytest.param(toleration("foo", "Lt", "10", "NoSchedule"), taint("foo", "5"), False,
                 id="Lt is not honoured while the comparison feature gate is off"),
    pytest.param(toleration("foo", "Bogus", "bar"), taint("foo", "bar"), False,
                 id="unknown operator"),
])
def test_tolerates(tol: api.Toleration, tnt: api.Taint, tolerated: bool) -> None:
    assert tolerates(tol, tnt) is tolerated


@pytest.mark.parametrize(("taints", "tolerations", "untolerated"), [
    pytest.param([], [], None, id="no taints"),
    pytest.param([taint("a")], [], "a", id="NoSchedule untolerated"),
    pytest.param([taint("a", effect="NoExecute")], [], "a", id="NoExecute untolerated"),
    pytest.param([taint("a", effect="PreferNoSchedule")], [], None,
                 id="PreferNoSchedule does not block"),
    pytest.param([taint("a"), taint("b")], [toleration("a", "Exists")], "b",
                 id="first untolerated one is reported"),
    pytest.param([taint("a"), taint("b")], [toleration("", "Exists")], None,
                 id="tolerate everything"),
])
def test_find_untolerated_taint(taints: list[api.Taint], tolerations: list[api.Toleration],
                                untolerated: str | None) -> None:
    found = find_untolerated_taint(taints, tolerations)
    assert (found.key if found is not None else None) == untolerated


def test_find_untolerated_taint_with_custom_effects() -> None:
    found = find_untolerated_taint([taint("soft", effect="PreferNoSchedule")], [],
                                   effects=("PreferNoSchedule",))
    assert found is not None
    assert found.key == "soft"
