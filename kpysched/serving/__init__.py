"""Secure serving as kube-scheduler does it: TLS on the secure port (certs), who is
asking (authn), may they (authz), wired into the endpoints as one middleware (access);
the endpoints themselves (server: health, /metrics, /debug, the decisions API;
configz: /configz).

With TLS the port is held by a front process (front, forward; started and restarted
by front_process) that authenticates and authorizes, and the scheduler process serves
only what it forwards, on a Unix socket (backend, trusted). May import the API client,
metrics, decisions and the cache's dump; nothing of the scheduling loop."""

from kpysched.config.tls import TLS_VERSIONS
from kpysched.serving.access import AccessControl, DelegationOptions
from kpysched.serving.certs import TlsOptions
from kpysched.serving.errors import ServingError

__all__ = ["TLS_VERSIONS", "AccessControl", "DelegationOptions", "ServingError",
           "TlsOptions"]
