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


def test_the_release_is_exported_as_kube_scheduler_exports_its_emulation() -> None:
    from kpysched.app import export_release
    from kpysched.config.features import Features
    from kpysched.metrics import SchedulerMetrics

    for release, min_compat, workload_stage in ((36, "1.35", "ALPHA"), (37, "1.36", "BETA")):
        metrics = SchedulerMetrics(release=release, process_metrics=False)
        export_release(metrics, Features.from_gates({"GenericWorkload": True}, release))
        lines = metrics.render().decode().splitlines()
        assert (f'version_info{{binary="1.37.2",component="kube",emulation="1.{release}",'
                f'min_compat="{min_compat}"}} 1.0') in lines
        assert (f'kubernetes_feature_enabled{{name="GenericWorkload",'
                f'stage="{workload_stage}"}} 1.0') in lines
        # GA in v1.37 (stage ""), beta in v1.36; on in both.
        stage = "" if release == 37 else "BETA"
        assert (f'kubernetes_feature_enabled{{name="NodeDeclaredFeatures",stage="{stage}"}} '
                "1.0") in lines
        gang = [line for line in lines if 'name="GangScheduling"' in line]
        off = 'kubernetes_feature_enabled{name="GangScheduling",stage="ALPHA"} 0.0'
        assert gang == ([] if release == 37 else [off])
