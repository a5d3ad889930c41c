"""The TLS versions `--tls-min-version` accepts, by kube-scheduler's names.

Here rather than in serving/ because the flag table refuses an unknown name while it
parses (config/flags/invocation.py), and config/ sits below serving/.
"""

from __future__ import annotations

import ssl
from typing import Final

# Python's ssl refuses anything older than TLS 1.2.
TLS_VERSIONS: Final = {
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}
