"""The incoming pod's namespaceSelector in each release.

v1.37 counts it only through the namespaces it resolves to (upstream's new "correctly
enforcing negative NamespaceSelector" scoring cases, ported here). v1.36 also keeps the
selector and matches it against no labels, so a selector an unlabelled namespace
satisfies (NotIn, DoesNotExist) selects pods of every namespace, in Filter as in Score;
the filtering cases below follow from the same upstream code (PreFilter resolves the
required terms the same way).
"""

from __future__ import annotations

import pytest

from kpysched.framework.status import Code
from kpysched.objects import api
from tests.unit.plugins.inter_pod_affinity.test_plugin import (
    AFF,
    ANTI,
    CHINA,
    INDIA,
    affinity,
    cluster,
    pod,
    req,
    run_filters,
    selector,
    term,
    weighted,
)
from tests.unit.plugins.inter_pod_affinity.test_scoring import run_scores

S1 = {"security": "S1"}
NOT_TEAM1 = selector(req("team", "NotIn", "team1"))
NO_TEAM_LABEL = selector(req("team", "DoesNotExist"))
NODES = {"node1": CHINA, "node2": INDIA}


def _s1_in_region(ns_selector: api.LabelSelector) -> api.PodAffinityTerm:
    return term(req("security", "In", "S1"), topology="region", ns_selector=ns_selector)


# Upstream's fixture: two S1 pods of team1 on node1 (China), one of team2 on node2 (India).
EXISTING = [pod(ns="subteam1.team1", labels=S1, node="node1"),
            pod(ns="subteam1.team1", labels=S1, node="node1"),
            pod(ns="subteam1.team2", labels=S1, node="node2")]


@pytest.mark.parametrize(("spec_affinity", "v36", "v37"), [
    # v1.36: node1 5 * 2, node2 5 * 1 -> 100, 0; v1.37: team1 out -> 0, 100.
    pytest.param(affinity(preferred=[weighted(5, _s1_in_region(NOT_TEAM1))]), [100, 0],
                 [0, 100], id="Affinity with pods correctly enforcing negative NamespaceSelector"),
    pytest.param(affinity(preferred_anti=[weighted(5, _s1_in_region(NOT_TEAM1))]), [0, 100],
                 [100, 0],
                 id="AntiAffinity with pods correctly enforcing negative NamespaceSelector"),
    # No namespace lacks the team label: v1.36 selects every one, v1.37 none (so no
    # topology scores, and PreScore skips).
    pytest.param(affinity(preferred=[weighted(5, _s1_in_region(NO_TEAM_LABEL))]), [100, 0],
                 (Code.SKIP, ""), id="DoesNotExist namespaceSelector"),
])
def test_preferred_terms(spec_affinity: api.Affinity, v36: object, v37: object) -> None:
    incoming = pod(ns="subteam1.team1", labels=S1, spec_affinity=spec_affinity)
    assert run_scores(incoming, EXISTING, NODES, release=36) == v36
    assert run_scores(incoming, EXISTING, NODES, release=37) == v37


@pytest.mark.parametrize(("existing_ns", "v36", "v37"), [
    pytest.param("subteam1.team1", ANTI, None, id="a pod of the excluded namespace"),
    pytest.param("subteam1.team2", ANTI, ANTI, id="a pod of a selected namespace"),
    pytest.param("not-listed", ANTI, None, id="a pod of a namespace the lister lacks"),
])
def test_required_anti_affinity(existing_ns: str, v36: object, v37: object) -> None:
    incoming = pod(ns="subteam1.team1", labels=S1,
                   required_anti=[_s1_in_region(NOT_TEAM1)])
    snapshot = cluster({"node1": CHINA}, [pod(ns=existing_ns, labels=S1, node="node1")])
    for release, expected in ((36, v36), (37, v37)):
        assert run_filters(incoming, snapshot, ["node1"], release=release) == (None, [expected])


@pytest.mark.parametrize(("existing_ns", "v36", "v37"), [
    pytest.param("subteam1.team1", None, AFF, id="only a pod of the excluded namespace"),
    pytest.param("subteam1.team2", None, None, id="a pod of a selected namespace"),
])
def test_required_affinity(existing_ns: str, v36: object, v37: object) -> None:
    incoming = pod(ns="subteam1.team1", labels=S1, required=[_s1_in_region(NOT_TEAM1)])
    snapshot = cluster({"node1": CHINA}, [pod(ns=existing_ns, labels=S1, node="node1")])
    for release, expected in ((36, v36), (37, v37)):
        assert run_filters(incoming, snapshot, ["node1"], release=release) == (None, [expected])
