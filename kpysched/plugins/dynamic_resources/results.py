"""Turning a found solution into AllocationResults: the device results, the
configuration from classes and claims that applies to them, and the node selector that
says where the allocated devices can be used.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol

from kpysched.objects import api
from kpysched.objects.dra import (
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    ResourceClaim,
)
from kpysched.plugins.dynamic_resources.allocation_state import Features
from kpysched.plugins.dynamic_resources.request_data import (
    AllocationError,
    Candidate,
    DeviceResult,
    RequestData,
)


class FoundSolution(Protocol):
    """What these functions read of a search that found a solution (search.py's
    Search), named here so that this module does not import the search back."""

    features: Features
    node: api.Node
    claims: Sequence[ResourceClaim]
    device_results: list[list[DeviceResult]]
    request_data: dict[tuple[int, int, int], RequestData]

CONFIG_FROM_CLASS = "FromClass"
CONFIG_FROM_CLAIM = "FromClaim"


def check_node_selectors(search: FoundSolution) -> None:
    """Raise what allocation_results would raise for the found solution."""
    for claim_index, claim in enumerate(search.claims):
        error = _node_selector_error(search.device_results[claim_index])
        if error is not None:
            raise AllocationError(f"create NodeSelector for claim {claim.metadata.name}: {error}")


def allocation_results(search: FoundSolution) -> list[AllocationResult]:
    results: list[AllocationResult] = []
    with_binding = search.features.device_binding_and_status
    for claim_index, claim in enumerate(search.claims):
        device_results = search.device_results[claim_index]
        devices = [_device_result(r, with_binding) for r in device_results]
        configs = _class_configs(search, claim_index, claim) + _claim_configs(
            search, claim_index, claim)
        if search.features.v1_37:
            configs = _clear_when_covering_all(search, claim_index, claim, configs)
        try:
            node_selector = node_selector_for(device_results, search.node.metadata.name)
        except ValueError as error:
            raise AllocationError(
                f"create NodeSelector for claim {claim.metadata.name}: {error}") from None
        results.append(AllocationResult(
            devices=DeviceAllocationResult(results=devices, config=configs),
            node_selector=node_selector))
    return results


def _device_result(result: DeviceResult, with_binding: bool) -> DeviceRequestAllocationResult:
    device_id = result.candidate.device_id
    device = result.candidate.device
    return DeviceRequestAllocationResult(
        request=result.request_name(),
        driver=device_id[0],
        pool=device_id[1],
        device=device_id[2],
        admin_access=result.admin_access,
        tolerations=list(result.request.tolerations),
        binding_conditions=list(device.binding_conditions) if with_binding else [],
        binding_failure_conditions=(list(device.binding_failure_conditions)
                                    if with_binding else []),
        share_id=result.share_id,
        consumed_capacity=({name: amount.text for name, amount in result.consumed.items()}
                           if result.consumed else {}),
    )


def _class_configs(search: FoundSolution, claim_index: int,
                   claim: ResourceClaim) -> list[DeviceAllocationConfiguration]:
    """Each class's configs once, naming every (sub)request that used the class."""
    configs: list[DeviceAllocationConfiguration] = []
    added_for_class: dict[str, list[DeviceAllocationConfiguration]] = {}
    for request_index in range(len(claim.spec.devices.requests)):
        data = search.request_data[(claim_index, request_index, 0)]
        if data.parent is not None:
            data = search.request_data[(claim_index, request_index, data.selected_sub_request)]
        class_name = data.device_class.metadata.name
        if class_name in added_for_class:
            for config in added_for_class[class_name]:
                config.requests.append(data.request_name())
            continue
        added = [DeviceAllocationConfiguration(source=CONFIG_FROM_CLASS,
                                               requests=[data.request_name()],
                                               opaque=config.opaque)
                 for config in data.device_class.spec.config]
        added_for_class[class_name] = added
        configs += added
    return configs


def _claim_configs(search: FoundSolution, claim_index: int,
                   claim: ResourceClaim) -> list[DeviceAllocationConfiguration]:
    """The claim's configs that apply to what was allocated: v1.36 once per request
    they name (as its allocator appends them), v1.37 once."""
    once = search.features.v1_37
    configs: list[DeviceAllocationConfiguration] = []
    for config in claim.spec.devices.config:
        copy = DeviceAllocationConfiguration(source=CONFIG_FROM_CLAIM,
                                             requests=config.requests, opaque=config.opaque)
        if not config.requests:
            configs.append(copy)
            continue
        for request_index, request in enumerate(claim.spec.devices.requests):
            if request.name in config.requests:
                configs.append(copy)
                if once:
                    break
                continue
            if _selected_sub_request(search, claim_index, request_index) in config.requests:
                configs.append(copy)
                if once:
                    break
    return configs


def _selected_sub_request(search: FoundSolution, claim_index: int, request_index: int) -> str:
    """"<request>/<subrequest>" for the subrequest a request with subrequests got, else
    "" (no config names that)."""
    data = search.request_data[(claim_index, request_index, 0)]
    if data.parent is None:
        return ""
    request = search.claims[claim_index].spec.devices.requests[request_index]
    return f"{request.name}/{request.first_available[data.selected_sub_request].name}"


def _clear_when_covering_all(search: FoundSolution, claim_index: int, claim: ResourceClaim,
                             configs: list[DeviceAllocationConfiguration],
                             ) -> list[DeviceAllocationConfiguration]:
    """v1.37: a config (from the class or the claim) whose requests cover every request
    of the claim, by name or by its chosen subrequest, gets no requests: empty means
    all. Copies, so that a claim's own config list is not changed."""
    cleared: list[DeviceAllocationConfiguration] = []
    for config in configs:
        covers_all = bool(config.requests) and all(
            request.name in config.requests
            or _selected_sub_request(search, claim_index, index) in config.requests
            for index, request in enumerate(claim.spec.devices.requests))
        cleared.append(DeviceAllocationConfiguration(
            source=config.source, requests=[], opaque=config.opaque) if covers_all else config)
    return cleared


def _contains(requirements: list[api.NodeSelectorRequirement],
              requirement: api.NodeSelectorRequirement) -> bool:
    values = set(requirement.values)
    return any(r.key == requirement.key and r.operator == requirement.operator
               and set(r.values) == values for r in requirements)


def device_placement(candidate: Candidate) -> tuple[str | None, api.NodeSelector | None]:
    """The node a candidate device is local to (None when none) and the node selector
    that says where it is reachable otherwise: the device's own with per-device node
    selection, else its slice's."""
    spec, device = candidate.slice.spec, candidate.device
    if spec.per_device_node_selection:
        return device.node_name, device.node_selector
    return spec.node_name, spec.node_selector


def _node_selector_error(results: list[DeviceResult]) -> str | None:
    """Why node_selector_for cannot make the selector: the first slice (or device)
    selector with several terms before any device local to the node."""
    for result in results:
        local_to, selector = device_placement(result.candidate)
        if local_to is not None or result.candidate.device.binds_to_node:
            return None
        if selector is not None and len(selector.node_selector_terms) > 1:
            return (f"unsupported ResourceSlice.NodeSelector with "
                    f"{len(selector.node_selector_terms)} terms")
    return None


@lru_cache(maxsize=16384)
def _local_node_selector(node_name: str) -> api.NodeSelector:
    """The selector for just this node. One object per node, shared by every
    allocation result that names it (nothing modifies an allocation's selector): Filter
    makes a result for each feasible node, and fewer objects to keep until the cycle
    ends means less work for the garbage collector."""
    return api.NodeSelector(node_selector_terms=[api.NodeSelectorTerm(match_fields=[
        api.NodeSelectorRequirement(key="metadata.name", operator="In",
                                    values=[node_name])])])


def node_selector_for(results: list[DeviceResult], node_name: str) -> api.NodeSelector | None:
    """Where the claim's devices are usable: just this node if any device is local to
    it (or binds to it), else the union of the slices' selector requirements, else
    anywhere (None). ValueError for a selector with several terms."""
    error = _node_selector_error(results)
    if error is not None:
        raise ValueError(error)
    fields: list[api.NodeSelectorRequirement] = []
    expressions: list[api.NodeSelectorRequirement] = []
    for result in results:
        local_to, selector = device_placement(result.candidate)
        if local_to is not None or result.candidate.device.binds_to_node:
            return _local_node_selector(node_name)
        if selector is None or not selector.node_selector_terms:
            continue
        term = selector.node_selector_terms[0]
        for requirement in term.match_fields:
            if not _contains(fields, requirement):
                fields.append(requirement)
        for requirement in term.match_expressions:
            if not _contains(expressions, requirement):
                expressions.append(requirement)
    if fields or expressions:
        return api.NodeSelector(node_selector_terms=[api.NodeSelectorTerm(
            match_expressions=expressions, match_fields=fields)])
    return None
