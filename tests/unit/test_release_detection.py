"""Start-up's /version reading when there is no answer to read: the newest release,
with the reason (the answers themselves: tests/unit/config/test_release.py; against
real control planes: tests/e2e/test_releases.py)."""

from __future__ import annotations

import socket
from pathlib import Path

from kpysched.app import detect_release
from kpysched.config.features import NEWEST_RELEASE
from kpysched.config.release import SOURCE_DEFAULT


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_an_api_server_that_does_not_answer_gives_the_newest_release(
        tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{_closed_port()}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n")
    choice = await detect_release(kubeconfig, None, timeout=5.0)
    assert (choice.release, choice.source) == (NEWEST_RELEASE, SOURCE_DEFAULT)
    assert choice.warning is not None and "GET /version" in choice.warning


async def test_no_credentials_at_all_give_the_newest_release(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    choice = await detect_release(missing, None)
    assert (choice.release, choice.source) == (NEWEST_RELEASE, SOURCE_DEFAULT)
    assert choice.warning is not None and "no API server configured" in choice.warning
