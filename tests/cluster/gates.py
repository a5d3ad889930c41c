"""Upstream feature gates and extra API versions for the test cluster's control plane.

A cluster started with `Gates` passes `--feature-gates` to kube-apiserver and
kube-controller-manager and `--runtime-config` to kube-apiserver, and records both in
`state.json` (`ClusterState.feature_gates`, `.runtime_config`). Whoever starts
upstream kube-scheduler against that cluster passes the same gates
(`UpstreamScheduler(state, feature_gates=state.feature_gates)`), so an alpha plugin
of upstream's can be the oracle for kpysched's.

`GANG` is what upstream v1.36's gang scheduling needs on every component:
* `GenericWorkload`: kube-apiserver serves `scheduling.k8s.io/v1alpha2` Workload and
  PodGroup only with it (pkg/registry/scheduling/rest), and drops a new pod's
  `spec.schedulingGroup` without it (pkg/api/pod/util.go); its admission stamps the
  `scheduling.k8s.io/podgroup-protection` finalizer on every PodGroup, which
  kube-controller-manager's podgroup-protection controller, run only with the gate,
  removes again (else no PodGroup and no namespace holding one could be deleted);
  kube-scheduler's queue and cache track pod groups only with it.
* `GangScheduling` (needs GenericWorkload): kube-scheduler's default profile gains
  the GangScheduling plugin (PreEnqueue until minCount pods exist, then Permit).
* `scheduling.k8s.io/v1alpha2=true`: alpha API versions are off by default, the gate
  alone serves nothing.

Release 1.37 (`gang("1.37")`) folds GangScheduling into GenericWorkload (beta, still
off by default; kube-apiserver refuses the old gate as unrecognized) and serves
Workload and PodGroup as `scheduling.k8s.io/v1beta1`, a beta version new in 1.37 and
so off by default too. `GANG` is release 1.36's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class Gates:
    """Feature gates for every upstream component, and API versions beyond the defaults."""

    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    # kube-apiserver's --runtime-config entries, e.g. "scheduling.k8s.io/v1alpha2=true".
    runtime_config: Sequence[str] = ()


UPSTREAM_DEFAULTS = Gates()
GANG = Gates(
    feature_gates=MappingProxyType({"GenericWorkload": True, "GangScheduling": True}),
    runtime_config=("scheduling.k8s.io/v1alpha2=true",),
)
_GANG_BY_RELEASE = {
    "1.36": GANG,
    "1.37": Gates(feature_gates=MappingProxyType({"GenericWorkload": True}),
                  runtime_config=("scheduling.k8s.io/v1beta1=true",)),
}


def gang(release: str) -> Gates:
    """What upstream gang scheduling needs on a control plane of `release` ("1.37")."""
    return _GANG_BY_RELEASE[release]


def feature_gates_args(feature_gates: Mapping[str, bool]) -> list[str]:
    """`--feature-gates=A=true,B=false`, or nothing for upstream's defaults."""
    if not feature_gates:
        return []
    pairs = ",".join(f"{name}={str(on).lower()}" for name, on in sorted(feature_gates.items()))
    return [f"--feature-gates={pairs}"]


def runtime_config_args(runtime_config: Sequence[str]) -> list[str]:
    """`--runtime-config=group/version=true,...`, or nothing for upstream's defaults."""
    return [f"--runtime-config={','.join(runtime_config)}"] if runtime_config else []


def parse_feature_gates(text: str) -> dict[str, bool]:
    """`A=true,B=false` (as kube-apiserver's flag takes it) to {"A": True, "B": False}."""
    gates: dict[str, bool] = {}
    for item in _items(text):
        name, _, value = item.partition("=")
        if not name or value.lower() not in ("true", "false"):
            raise ValueError(f"--feature-gates: {item!r} is not Name=true or Name=false")
        gates[name] = value.lower() == "true"
    return gates


def parse_runtime_config(text: str) -> tuple[str, ...]:
    """`g/v=true,g2/v2=false` to its entries; kube-apiserver refuses unknown ones itself."""
    entries = _items(text)
    for entry in entries:
        if not entry.partition("=")[0]:
            raise ValueError(f"--runtime-config: {entry!r} names no API group/version")
    return entries


def _items(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())
