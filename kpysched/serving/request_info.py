"""Which API resource a request path names, as k8s.io/apiserver's RequestInfoFactory
reads /apis/<group>/<version>/[namespaces/<ns>/]<resource>[/<name>[/<subresource>]],
so the delegated authorizer can ask about the resource (RBAC rules on apiGroups and
resources, per namespace) instead of about the path. Discovery paths (/apis,
/apis/<group>, /apis/<group>/<version>) stay non-resource requests, as upstream's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

_VERBS: Final = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


@dataclass(frozen=True, slots=True)
class ResourceAttributes:
    group: str
    version: str
    resource: str
    verb: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""

    def review(self) -> dict[str, str]:
        """The SubjectAccessReview's resourceAttributes."""
        attributes = {"group": self.group, "version": self.version,
                      "resource": self.resource, "verb": self.verb}
        for key, value in (("namespace", self.namespace), ("name", self.name),
                           ("subresource", self.subresource)):
            if value:
                attributes[key] = value
        return attributes


def resource_attributes(path: str, method: str, watch: bool = False,
                        ) -> ResourceAttributes | None:
    """None for a non-resource request (anything outside /apis/<group>/<version>/...)."""
    parts = [part for part in path.split("/") if part]
    if len(parts) < 4 or parts[0] != "apis":
        return None
    group, version, rest = parts[1], parts[2], parts[3:]
    namespace = ""
    # namespaces/<ns>/<resource>...: a namespaced resource; namespaces[/<ns>] alone is
    # the Namespace itself, as upstream reads it.
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 else ""
    if method in ("GET", "HEAD"):
        verb = "watch" if watch else ("get" if name else "list")
    else:
        verb = _VERBS.get(method, method.lower())
        if verb == "delete" and not name:
            verb = "deletecollection"
    return ResourceAttributes(group, version, resource, verb, namespace, name, subresource)
