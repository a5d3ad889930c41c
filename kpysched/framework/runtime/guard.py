"""A plugin that raises becomes an Error status naming it, never a dead process.

Upstream's plugins return errors; a Python plugin (out-of-tree ones above all) may
raise instead. Left alone, one raising plugin would end the scheduling loop, the
standby would take the Lease, pop the same pod and die the same way. Turned into
an Error status, the pod gets a FailedScheduling event naming the plugin, goes to
backoff, and every other pod is still scheduled.
"""

from __future__ import annotations

import structlog

from kpysched.framework.status import Status

log = structlog.get_logger(__name__)


def plugin_raised(plugin: str, extension_point: str, error: Exception) -> Status:
    """Log the traceback once and hand back the Error status the caller reports."""
    log.error("plugin.raised", plugin=plugin, extension_point=extension_point,
              error=f"{type(error).__name__}: {error}", exc_info=error)
    return Status.error(f"{type(error).__name__}: {error}", plugin)
