"""What `kpysched run` imports before it starts leaves out what start-up does not use
(each costs start-up CPU on every start; a short benchmark run or a restart pays it).
Checked in a fresh interpreter: this test process has imported everything already."""

from __future__ import annotations

import json
import subprocess
import sys

# What cli._run imports before it runs the app (its function-local imports).
RUN_IMPORTS = """
import kpysched.cli
from kpysched import app, logs
from kpysched.config import load_config
from kpysched.config.flags import interpret
from kpysched.config.written import write_config
from kpysched.framework.registry import full_registry
from kpysched.plugins import IN_TREE
from kpysched.serving import ServingError
"""

LEFT_OUT = {
    # DRA device selectors' runtime: compiled on the first selector (cel_lazy.py).
    "kpysched.plugins.dynamic_resources.cel": "the CEL device-selector runtime",
    "cel_expr_python": "cel-expr-python",
    "google.protobuf": "protobuf (the CEL library's descriptors)",
    # x509: generating a self-signed pair, reading CAs (serving/certs.py, reload.py,
    # requestheader.py); a plain-HTTP (--insecure-serving) start does neither.
    "cryptography": "cryptography",
}


def loaded_after(code: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_run_s_imports_leave_out_what_start_up_does_not_use() -> None:
    loaded = loaded_after(RUN_IMPORTS)
    assert "kpysched.plugins.dynamic_resources.plugin" in loaded  # the check reaches them
    assert {name: why for name, why in LEFT_OUT.items() if name in loaded} == {}
