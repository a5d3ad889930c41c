"""Configuration: process Settings (env + flags) and the KubeSchedulerConfiguration
file (kubescheduler.config.k8s.io/v1) resolved into one EffectiveProfile per profile.

    config, profiles = load_config(settings.config, full_registry(IN_TREE))

- settings.py (Settings), scheduler_config.py (the file's model), loader.py (read,
  default, validate), profiles.py (EffectiveProfiles), written.py (--write-config-to),
  errors.py; features.py (the feature gates kpysched honours); tls.py (the TLS version
  names); flags/ (kube-scheduler's command line).

May import: objects/ and framework/ (the contract: the registry's PluginSpec and
extension points). Never runtime/, plugins, queue/, scheduling/, serving/.
"""

from kpysched.config.errors import ConfigError
from kpysched.config.loader import load_config, parse_config
from kpysched.config.profiles import (
    DEFAULT_MULTI_POINT,
    UPSTREAM_PLUGINS,
    EffectiveProfile,
    build_profiles,
)
from kpysched.config.scheduler_config import (
    API_VERSION,
    DEFAULT_LEASE_NAME,
    DEFAULT_SCHEDULER_NAME,
    KIND,
    ClientConnection,
    LeaderElection,
    PluginConfig,
    PluginEntry,
    Plugins,
    PluginSet,
    Profile,
    SchedulerConfiguration,
)
from kpysched.config.settings import Settings, kubeconfig_path
from kpysched.objects.durations import parse_go_duration

__all__ = [
    "API_VERSION",
    "DEFAULT_LEASE_NAME",
    "DEFAULT_MULTI_POINT",
    "DEFAULT_SCHEDULER_NAME",
    "KIND",
    "UPSTREAM_PLUGINS",
    "ClientConnection",
    "ConfigError",
    "EffectiveProfile",
    "LeaderElection",
    "PluginConfig",
    "PluginEntry",
    "PluginSet",
    "Plugins",
    "Profile",
    "SchedulerConfiguration",
    "Settings",
    "build_profiles",
    "kubeconfig_path",
    "load_config",
    "parse_config",
    "parse_go_duration",
]
