"""Secure serving as kube-scheduler does it: TLS on the secure port (certs), who is
asking (authn), may they (authz), wired into the endpoints as one middleware (access)."""

from kpysched.serving.access import AccessControl, DelegationOptions
from kpysched.serving.certs import TLS_VERSIONS, TlsOptions
from kpysched.serving.errors import ServingError

__all__ = ["TLS_VERSIONS", "AccessControl", "DelegationOptions", "ServingError",
           "TlsOptions"]
