"""Explain's suggestions for a pending pod: the cluster read with the user's own
kubeconfig (GET only, as `kpysched simulate` reads it) and the fixes checked by
kpysched.suggest over that snapshot, on this machine. The scheduler is not asked to
simulate anything: a tenant's question costs the scheduler nothing."""

from __future__ import annotations

import argparse
from typing import Any

from kpysched.api.kubeconfig_file import KubeconfigError


def pending(body: dict[str, Any]) -> bool:
    """Whether the answer is about a pod still waiting to be placed."""
    if body.get("queue") is not None:
        return True
    decisions = body.get("decisions") or []
    return bool(decisions) and decisions[-1].get("outcome") == "Unschedulable"


async def suggest(options: argparse.Namespace, namespace: str, name: str,
                  ) -> dict[str, Any] | str:
    """The checked fixes as JSON, or why there are none to give."""
    from kpysched import logs
    from kpysched.config import ConfigError
    from kpysched.config.release import ReleaseError
    from kpysched.framework.registry import full_registry
    from kpysched.plugins import IN_TREE
    from kpysched.simulate.cli import read_cluster
    from kpysched.simulate.release import choose, features_of
    from kpysched.simulate.snapshot import SnapshotError
    from kpysched.simulate.world import InputError, World
    from kpysched.suggest.trial import Trial, trial_config

    # The simulated scheduler logs as the live one does: only its warnings, on stderr.
    logs.configure("warning", "auto")
    registry = full_registry(IN_TREE)
    try:
        taken = await read_cluster(options.kubeconfig, options.context)
        world = World.from_snapshot(taken)
    except (KubeconfigError, OSError) as error:
        return str(error)
    except (SnapshotError, InputError) as error:
        return (f"reading the cluster (suggestions need read access to its nodes, pods and "
                f"the objects they use): {error}")
    try:
        # The release of the cluster's scheduler, as `kpysched run` picks it.
        features = features_of(choose(options.emulated_version, taken),
                               quiet=False, command="explain")
        config, profiles = trial_config(options.scheduler_config, registry, features)
    except ReleaseError as error:
        return str(error)
    except ConfigError as error:
        return f"--config: {error}"
    pod = next((p for p in world.of("pods")
                if p.metadata.namespace == namespace and p.metadata.name == name), None)
    if pod is None:
        return f"pod {namespace}/{name} is not in the cluster"
    if pod.spec.node_name:
        return f"pod {namespace}/{name} is bound to {pod.spec.node_name}"
    return (await Trial(config, profiles, registry, world, features).suggest(pod)).to_json()
