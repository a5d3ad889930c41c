"""kube-scheduler's command-line flags for `kpysched run`: the pflag syntax (parser),
the flag table (table), the gates (feature_gates) and what a command line means
(invocation).

May import: config/ (features, the TLS version names), objects/ (durations); nothing
that runs the scheduler."""

from kpysched.config.flags.invocation import Invocation, interpret
from kpysched.config.flags.parser import FlagError

__all__ = ["FlagError", "Invocation", "interpret"]
