"""--feature-gates checked against the gates of the release kpysched behaves as
(config/gate_tables: the ones `kube-scheduler --help` lists, and the GA or deprecated
ones it accepts without listing them).

kpysched implements each release's default behaviour. A gate set to its default is
accepted, and so are that release's workload gates turned on (config.features); a gate
locked to its default and set otherwise is refused in kube-scheduler's words; any other
gate changed from its default, or one the release does not know, stops start-up:
kpysched would otherwise claim a behaviour it does not have.

The check needs the release, which may come from the cluster (config.release), so the
command line keeps the gates as written and checks only their form at first
(form_problems); check_gates runs once the release is known.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from kpysched.config.features import (
    HIDDEN_GATES,
    LISTED_GATES,
    NEWEST_RELEASE,
    RELEASE_DEPENDS_ON,
    RELEASE_SWITCHABLE,
    RELEASES,
)
from kpysched.config.flags.parser import parse_bool

KUBE_COMPONENT: Final = "kube"


def form_problems(gates: Mapping[str, str]) -> list[str]:
    """Problems any release would find: an unknown component or a value that is not a
    boolean, one sentence each."""
    problems = []
    for written, text in gates.items():
        component, _, _ = written.rpartition(":")
        if component not in ("", KUBE_COMPONENT):
            problems.append(f'unknown component "{component}" in "{written}" (only '
                            f'"{KUBE_COMPONENT}" exists)')
        elif parse_bool(text.strip()) is None:
            problems.append(f'"{written}={text}": the value must be true or false')
    return problems


def check_gates(gates: Mapping[str, str], release: int = NEWEST_RELEASE) -> list[str]:
    """Problems with `--feature-gates` entries ("[kube:]Name" -> "true"/"false") for
    kube-scheduler of `release`, one sentence each; empty when kpysched can honour them
    all."""
    problems = form_problems(gates)
    if problems:
        return problems
    listed, hidden = LISTED_GATES[release], HIDDEN_GATES[release]
    switchable = RELEASE_SWITCHABLE[release]
    patch = RELEASES[release]
    for written, text in gates.items():
        name = written.rpartition(":")[2]
        value = parse_bool(text.strip())
        if name in hidden:
            default, locked = hidden[name]
            if value != default and locked:
                # Upstream's wording (component-base featuregate).
                problems.append(f"cannot set feature gate {name} to {str(value).lower()}, "
                                f"feature is locked to {str(default).lower()}")
            elif value != default:
                problems.append(f"{name}={text}: kpysched implements the v1.{release} default "
                                f"({name}={str(default).lower()}) only")
        elif name not in listed:
            problems.append(f'unknown feature gate "{name}" (kube-scheduler {patch} does '
                            "not know it)")
        elif value != listed[name] and name not in switchable:
            problems.append(f"{name}={text}: kpysched implements the v1.{release} default "
                            f"({name}={str(listed[name]).lower()}) only")
    on = gate_values(gates)
    for name, needed in RELEASE_DEPENDS_ON[release].items():
        off = [need for need in needed if not on.get(need)]
        if on.get(name) and off:
            # Upstream's wording (component-base featuregate), deps as Go prints a slice.
            problems.append(f"{name} is enabled, but depends on features that are "
                            f"disabled: [{' '.join(off)}]")
    return problems


def switched(gates: Mapping[str, str], release: int) -> dict[str, bool]:
    """The workload gates of `release` among already checked `gates`, name -> value."""
    return {name: on for name, on in gate_values(gates).items()
            if name in RELEASE_SWITCHABLE[release]}


def gate_values(gates: Mapping[str, str]) -> dict[str, bool]:
    """`--feature-gates` entries as name -> bool, "kube:" dropped, the last one winning;
    entries that are not booleans are left out (check_gates reports them)."""
    values = {}
    for written, text in gates.items():
        value = parse_bool(text.strip())
        if value is not None:
            values[written.rpartition(":")[2]] = value
    return values
