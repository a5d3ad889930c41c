"""Every flag `kpysched run` accepts: kube-scheduler's (v1.37.2's and v1.36.4's are the
same set), by section as its --help lists them, then kpysched's own. What each one
does (or why it is refused) is in invocation.py."""

from __future__ import annotations

from typing import Final

from kpysched.config.flags.parser import Flag, Kind

B, S, N, F, D, L, M = (Kind.BOOL, Kind.STRING, Kind.INT, Kind.FLOAT, Kind.DURATION,
                       Kind.STRINGS, Kind.MAP)

MISC = "Misc"
SERVING = "Secure serving"
AUTHN = "Authentication"
AUTHZ = "Authorization"
DEPRECATED = "Deprecated (ignored when --config is given, as kube-scheduler does)"
ELECTION = "Leader election"
GATES = "Feature gate"
METRICS = "Metrics"
LOGS = "Logs"
GLOBAL = "Global"
KPYSCHED = "kpysched"

FLAGS: Final[tuple[Flag, ...]] = (
    Flag("config", S, "KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) file", MISC),
    Flag("master", S, "API server address; overrides the kubeconfig's server", MISC),
    Flag("write-config-to", S, "write the effective configuration to this file and exit",
         MISC),

    Flag("bind-address", S, "address of the secure port", SERVING, default="0.0.0.0"),
    Flag("secure-port", N, "HTTPS port of /healthz /livez /readyz /metrics; 0 serves "
         "nothing", SERVING, default="10259"),
    Flag("cert-dir", S, "where a generated self-signed pair is written (and reused); "
         "without it the pair is kept in memory only", SERVING),
    Flag("tls-cert-file", S, "serving certificate (PEM, CA certificates after it)", SERVING),
    Flag("tls-private-key-file", S, "key of --tls-cert-file", SERVING),
    Flag("tls-min-version", S, "VersionTLS12 or VersionTLS13", SERVING),
    Flag("permit-address-sharing", B, "bind with SO_REUSEADDR", SERVING, default="false"),
    Flag("permit-port-sharing", B, "bind with SO_REUSEPORT", SERVING, default="false"),
    Flag("disable-http2-serving", B, "accepted: kpysched serves HTTP/1.1 only", SERVING,
         default="false"),
    Flag("http2-max-streams-per-connection", N, "only 0: kpysched serves no HTTP/2",
         SERVING, default="0"),
    Flag("tls-cipher-suites", L, "refused: Python's ssl defaults apply", SERVING),
    Flag("tls-curve-preferences", L, "refused: Python's ssl defaults apply", SERVING),
    Flag("tls-sni-cert-key", L, "refused: one serving certificate only", SERVING),

    Flag("authentication-kubeconfig", S, "kubeconfig allowed to create tokenreviews; "
         "empty: in-cluster, else every token is anonymous", AUTHN),
    Flag("authentication-skip-lookup", B, "do not look up the client CA in configmap "
         "kube-system/extension-apiserver-authentication", AUTHN, default="false"),
    Flag("authentication-token-webhook-cache-ttl", D, "how long TokenReview answers are "
         "cached", AUTHN, default="10s"),
    Flag("authentication-tolerate-lookup-failure", B, "start anyway when that lookup "
         "fails", AUTHN, default="true"),
    Flag("client-ca-file", S, "CA of client certificates (user = CN, groups = O)", AUTHN),
    Flag("requestheader-allowed-names", L, "common names of front-proxy client "
         "certificates allowed to assert users in headers; empty: any the CA issued", AUTHN),
    Flag("requestheader-client-ca-file", S, "CA of front-proxy client certificates (the "
         "aggregator's); unset: every requestheader-* setting is read from configmap "
         "kube-system/extension-apiserver-authentication", AUTHN),
    Flag("requestheader-extra-headers-prefix", L, "prefixes of headers carrying user "
         "extras", AUTHN, default="x-remote-extra-"),
    Flag("requestheader-group-headers", L, "headers carrying groups", AUTHN,
         default="x-remote-group"),
    Flag("requestheader-uid-headers", L, "headers carrying the UID", AUTHN,
         default="x-remote-uid"),
    Flag("requestheader-username-headers", L, "headers carrying the user name", AUTHN,
         default="x-remote-user"),

    Flag("authorization-always-allow-paths", L, "paths served without authorization",
         AUTHZ, default="/healthz,/readyz,/livez"),
    Flag("authorization-kubeconfig", S, "kubeconfig allowed to create subjectaccessreviews;"
         " empty: in-cluster, else only always-allowed paths are served", AUTHZ),
    Flag("authorization-webhook-cache-authorized-ttl", D, "how long allowed answers are "
         "cached", AUTHZ, default="10s"),
    Flag("authorization-webhook-cache-unauthorized-ttl", D, "how long denied answers are "
         "cached", AUTHZ, default="10s"),

    Flag("contention-profiling", B, "true is refused unless --profiling=false (no pprof)",
         DEPRECATED, default="true"),
    Flag("kube-api-burst", N, "clientConnection.burst", DEPRECATED, default="100"),
    Flag("kube-api-content-type", S, "clientConnection.contentType (kpysched speaks JSON "
         "either way)", DEPRECATED, default="application/vnd.kubernetes.protobuf"),
    Flag("kube-api-qps", F, "clientConnection.qps", DEPRECATED, default="50"),
    Flag("kubeconfig", S, "clientConnection.kubeconfig (default: $KUBECONFIG, else "
         "in-cluster)", DEPRECATED),
    Flag("pod-max-in-unschedulable-pods-duration", D, "retry unschedulable pods after this "
         "long (applies with --config too, as upstream)", DEPRECATED, default="5m0s"),
    Flag("profiling", B, "true is refused: kpysched serves no /debug/pprof", DEPRECATED,
         default="true"),

    Flag("leader-elect", B, "leaderElection.leaderElect", ELECTION, default="true"),
    Flag("leader-elect-lease-duration", D, "leaderElection.leaseDuration", ELECTION,
         default="15s"),
    Flag("leader-elect-renew-deadline", D, "leaderElection.renewDeadline", ELECTION,
         default="10s"),
    Flag("leader-elect-resource-lock", S, "only leases", ELECTION, default="leases"),
    Flag("leader-elect-resource-name", S, "leaderElection.resourceName", ELECTION,
         default="kpysched"),
    Flag("leader-elect-resource-namespace", S, "leaderElection.resourceNamespace", ELECTION,
         default="kube-system"),
    Flag("leader-elect-retry-period", D, "leaderElection.retryPeriod", ELECTION,
         default="2s"),

    Flag("emulated-version", L, "kube=1.36 or kube=1.37: the kube-scheduler release to "
         "behave as (default: the API server's minor, else 1.37)", GATES),
    Flag("feature-gates", M, "[kube:]Gate=bool,...; only the release's defaults, and "
         "its GenericWorkload (with GangScheduling in 1.36)", GATES),
    Flag("min-compatibility-version", L, "kube=1.35 or kube=1.36", GATES),

    Flag("allow-metric-labels", M, "refused: not implemented", METRICS),
    Flag("allow-metric-labels-manifest", S, "refused: not implemented", METRICS),
    Flag("disabled-metrics", L, "metric families left out of /metrics", METRICS),
    Flag("show-hidden-metrics-for-version", S, "refused: kpysched hides no metrics",
         METRICS),

    Flag("log-flush-frequency", D, "accepted: every log line is written at once", LOGS,
         default="5s"),
    Flag("log-json-info-buffer-size", S, "refused unless 0 (alpha upstream)", LOGS),
    Flag("log-json-split-stream", B, "refused (alpha upstream)", LOGS, default="false"),
    Flag("log-text-info-buffer-size", S, "refused unless 0 (alpha upstream)", LOGS),
    Flag("log-text-split-stream", B, "refused (alpha upstream)", LOGS, default="false"),
    Flag("logging-format", S, "text (key=value) or json", LOGS, default="text"),
    Flag("v", N, "verbosity: 0-3 = info, 4 and more = debug", LOGS, shorthand="v"),
    Flag("vmodule", S, "refused: per-file verbosity is klog's", LOGS),

    Flag("help", B, "print this help and exit", GLOBAL, shorthand="h"),
    Flag("version", Kind.OPTIONAL_STRING, "print the version and exit", GLOBAL),

    Flag("log-level", S, "debug | info | warning | error (instead of -v)", KPYSCHED,
         default="info"),
    Flag("log-format", S, "auto | json | console (instead of --logging-format)", KPYSCHED,
         default="auto"),
    Flag("event-loop", S, "uvloop | asyncio", KPYSCHED, default="uvloop"),
    Flag("insecure-serving", B, "serve plain HTTP without authentication, on loopback "
         "only (binds 127.0.0.1; another --bind-address is refused)", KPYSCHED,
         default="false"),
    Flag("decision-records", N, "scheduling attempts kept for `kpysched explain` (0: "
         "record nothing)", KPYSCHED, default="1000"),
    Flag("enable-decision-endpoint", B, "serve the kept decisions at /debug/decisions/"
         "<namespace>/<pod> (sensitive; authorized as /metrics is)", KPYSCHED,
         default="false"),
    Flag("enable-cache-endpoint", B, "serve the scheduler cache and queue sizes at "
         "/debug/cache (sensitive; authorized as /metrics is)", KPYSCHED, default="false"),
)
