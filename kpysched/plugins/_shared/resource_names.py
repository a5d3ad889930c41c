"""Which resource names are extended resources (upstream's IsExtendedResourceName and
IsDRAExtendedResourceName in pkg/apis/core/v1/helper): NodeResourcesFit and
BalancedAllocation ask it of the names they score, DynamicResources of the names a
pod requests."""

from __future__ import annotations

from kpysched.objects.dra import IMPLICIT_EXTENDED_RESOURCE_PREFIX
from kpysched.plugins._shared.args import qualified_name_errors


def is_extended_resource_name(name: str) -> bool:
    """Upstream's IsExtendedResourceName: domain-qualified, outside *kubernetes.io/."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


def is_dra_extended_resource_name(name: str) -> bool:
    """Upstream's IsDRAExtendedResourceName: an extended resource name, or an implicit
    deviceclass.resource.kubernetes.io/<class> one."""
    return is_extended_resource_name(name) or name.startswith(IMPLICIT_EXTENDED_RESOURCE_PREFIX)
