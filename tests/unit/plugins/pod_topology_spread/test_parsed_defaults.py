"""PodTopologySpread keeps its default constraints parsed per action when no pod label
enters them (no matchLabelKeys), instead of parsing them for every pod without
constraints of its own (twice a cycle: PreFilter and PreScore).

Hypothesis draws default constraints (system or List; with and without matchLabelKeys,
either action) and a run of pods with drawn labels, each with a service selector or
none, and asks one plugin for every pod's constraints at both actions, as a run of
cycles does: each answer must equal a fresh plugin's, whose defaults are parsed anew.
"""

from __future__ import annotations

from typing import Any, cast

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kpysched.framework.interfaces import Handle
from kpysched.plugins import pod_topology_spread as pts
from kpysched.plugins.pod_topology_spread.common import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY
from tests.unit.builders import FakeHandle, label_selector, make_pod

_SETTINGS = settings(derandomize=True, deadline=None, database=None, max_examples=150,
                     suppress_health_check=[HealthCheck.too_slow])
KEYS = ("app", "tier", "version")


@st.composite
def defaults(draw: st.DrawFn) -> pts.PodTopologySpreadArgs:
    if draw(st.booleans()):
        return pts.PodTopologySpreadArgs()  # the system defaults
    constraints: list[dict[str, Any]] = []
    # Each (topology key, action) once, as validation asks.
    pairs = draw(st.lists(st.sampled_from(
        [(key, action) for key in ("zone", "kubernetes.io/hostname")
         for action in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)]), min_size=1, max_size=3,
        unique=True))
    for key, action in pairs:
        constraint: dict[str, Any] = {"maxSkew": draw(st.integers(1, 5)),
                                      "topologyKey": key, "whenUnsatisfiable": action}
        keys = draw(st.lists(st.sampled_from(KEYS), max_size=2, unique=True))
        if keys:
            constraint["matchLabelKeys"] = keys
        constraints.append(constraint)
    return pts.PodTopologySpreadArgs.model_validate(
        {"defaultingType": "List", "defaultConstraints": constraints})


pods = st.lists(st.tuples(
    st.dictionaries(st.sampled_from(KEYS), st.sampled_from(("a", "b")), max_size=3),
    st.sampled_from((None, "app", "tier"))), min_size=1, max_size=6)


@_SETTINGS
@given(args=defaults(), run=pods)
def test_kept_defaults_are_the_defaults_parsed_anew(
        args: pts.PodTopologySpreadArgs, run: list[tuple[dict[str, str], str | None]]) -> None:
    handle = FakeHandle()
    kept = pts.PodTopologySpread(args, cast(Handle, handle))
    for index, (labels, service_key) in enumerate(run):
        builder = make_pod(f"p{index}")
        for key, value in labels.items():
            builder.label(key, value)
        pod = builder.obj()
        if service_key is not None:
            handle.spread_selectors[f"{pod.metadata.namespace}/{pod.metadata.name}"] = (
                label_selector({service_key: labels.get(service_key, "a")}))
        for action in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            fresh = pts.PodTopologySpread(args, cast(Handle, handle))
            assert kept.constraints(pod, action) == fresh.constraints(pod, action)
