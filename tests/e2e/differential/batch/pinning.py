"""Keep a batch's scenarios apart: each copy's pods may only land on that copy's nodes,
and a scenario's image names are its own.

The pin is a required node affinity on metadata.name (added to every term the pod
already has, so the scenario's own terms still apply). NodeAffinity's PreFilter turns
it into the set of nodes to look at, so every scheduler reports the rest of the batch
as one clause, "N node(s) didn't satisfy plugin(s) [NodeAffinity]", and judges only the
scenario's own nodes with its filters and scores, as if it were alone. A nodeSelector
on a batch label would instead let other scenarios' taints and labels into the
FailedScheduling histogram.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

NAME_FIELD = "metadata.name"


def pin_to_nodes(pod_spec: dict[str, Any], node_names: Iterable[str]) -> None:
    """Restrict `pod_spec` to `node_names`: each required node affinity term the pod
    has (or one empty term) becomes one term per node, the term AND `metadata.name In
    [node]` (the API takes one value per metadata.name requirement); terms are ORed."""
    node_affinity = pod_spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms") or [{}]
    required["nodeSelectorTerms"] = [
        {**copy.deepcopy(term), "matchFields": [
            *copy.deepcopy(term.get("matchFields", [])),
            {"key": NAME_FIELD, "operator": "In", "values": [name]}]}
        for term in terms for name in sorted(node_names)]


def image_of_scenario(image: str, scenario_index: int) -> str:
    """A scenario's own name for `image`: ImageLocality counts the nodes holding an
    image across the whole cluster, so two scenarios naming the same image would
    score each other's nodes."""
    name, _, tag = image.rpartition(":")
    if not name or "/" in tag:  # no tag (a ':' belongs to a registry port)
        return f"{image}:batch-{scenario_index}"
    return f"{name}:{tag}-batch-{scenario_index}"


def scaled_image_size(size: int, scenario_nodes: int, batch_nodes: int) -> int:
    """The size that gives a node the ImageLocality score the scenario alone would give.

    The score scales an image's size by the share of the cluster's nodes that hold it.
    Alone, k of the scenario's n nodes hold it; in the batch the two copies' 2k nodes of
    the batch's N do, so the size is multiplied by N / 2n."""
    return size * batch_nodes // (2 * scenario_nodes)


def rename_images(container: dict[str, Any], images: dict[str, str]) -> None:
    if container.get("image") in images:
        container["image"] = images[container["image"]]
