"""An optional resource kpysched may not read: DeviceTaintRules under deploy/'s RBAC on a
v1.37 cluster.

deploy/ is the chart rendered for a v1.36 cluster, so its ClusterRole grants no list on
resource.k8s.io devicetaintrules, which kpysched behaving as 1.37 watches. kpysched runs
here as deploy/'s ServiceAccount would (a token of a ServiceAccount bound to exactly
deploy/'s ClusterRole rules) against a v1.37.2 control plane with RBAC on. It must
become ready and schedule a pod, warn once that it reads the rules as none and what to
do (`informer.optional_unavailable`, status 403), export
kpysched_informer_unavailable{resource="devicetaintrules"} 1, and, once the rule is
granted, list them without a restart (`informer.optional_available`, the gauge 0).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster import kube
from tests.cluster.cluster import ClusterState, log_tail
from tests.cluster.kpysched_process import KpyschedProcess, scheduler_config

pytestmark = [pytest.mark.e2e, pytest.mark.release("1.37")]

ROOT = Path(__file__).resolve().parents[2]
DEPLOY_RBAC = ROOT / "deploy" / "rbac.yaml"
RBAC_API = "rbac.authorization.k8s.io"
DEVICE_TAINT_RULES = {"apiGroups": ["resource.k8s.io"], "resources": ["devicetaintrules"],
                      "verbs": ["list", "watch"]}
# The reflector's backoff is capped at 30 s: a granted rule is listed within that, plus
# the authorizer's lag in seeing the new binding.
GRANTED_SECONDS = 90.0
WAIT_SECONDS = 60.0


def deploy_cluster_role_rules() -> list[dict[str, Any]]:
    documents = [d for d in yaml.safe_load_all(DEPLOY_RBAC.read_text()) if d]
    (role,) = [d for d in documents if d["kind"] == "ClusterRole"]
    rules: list[dict[str, Any]] = role["rules"]
    return rules


class Identity:
    """A ServiceAccount in `namespace` and the cluster-scoped roles and bindings made for
    it (deleted by `delete`)."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.rbac = client.RbacAuthorizationV1Api(api)
        self.core = client.CoreV1Api(api)
        self.authz = client.AuthorizationV1Api(api)
        self.namespace = namespace
        self.account = "kpysched"
        self.made: list[tuple[str, str]] = []  # (kind, name)

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.account}"

    async def create_account(self) -> None:
        await self.core.create_namespaced_service_account(
            self.namespace, {"metadata": {"name": self.account}})

    async def bind(self, suffix: str, rules: Sequence[Mapping[str, Any]]) -> None:
        name = f"{self.namespace}-{suffix}"
        await self.rbac.create_cluster_role({"metadata": {"name": name},
                                             "rules": [dict(r) for r in rules]})
        self.made.append(("ClusterRole", name))
        await self.rbac.create_cluster_role_binding({
            "metadata": {"name": name},
            "roleRef": {"apiGroup": RBAC_API, "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": self.account,
                          "namespace": self.namespace}]})
        self.made.append(("ClusterRoleBinding", name))

    async def allowed(self, verb: str, group: str, resource: str) -> bool:
        review = await self.authz.create_subject_access_review({
            "spec": {"user": self.user,
                     "groups": ["system:serviceaccounts",
                                f"system:serviceaccounts:{self.namespace}",
                                "system:authenticated"],
                     "resourceAttributes": {"verb": verb, "group": group,
                                            "resource": resource}}})
        return bool(review.status.allowed)

    async def kubeconfig(self, cluster: ClusterState, path: Path) -> Path:
        request = await self.core.create_namespaced_service_account_token(
            self.account, self.namespace, {"spec": {"expirationSeconds": 3600}})
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "sa",
            "clusters": [{"name": "test", "cluster": {
                "server": cluster.server, "certificate-authority": cluster.ca_file}}],
            "users": [{"name": "sa", "user": {"token": request.status.token}}],
            "contexts": [{"name": "sa", "context": {"cluster": "test", "user": "sa"}}]}))
        return path

    async def delete(self) -> None:
        for kind, name in reversed(self.made):
            delete = (self.rbac.delete_cluster_role if kind == "ClusterRole"
                      else self.rbac.delete_cluster_role_binding)
            try:
                await delete(name)
            except ApiException as error:
                if error.status != 404:
                    raise


@pytest.fixture
async def identity(api: client.ApiClient, namespace: str) -> AsyncIterator[Identity]:
    made = Identity(api, namespace)
    try:
        yield made
    finally:
        await made.delete()


def gauge(kp: KpyschedProcess, name: str, **labels: str) -> float | None:
    status, body = kp.get("/metrics")
    assert status == 200, body[:300]
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v
                                           for k, v in labels.items()):
                return float(sample.value)
    return None


async def until_gauge(kp: KpyschedProcess, value: float, timeout: float) -> None:
    async def reached() -> bool:
        seen = await asyncio.to_thread(gauge, kp, "kpysched_informer_unavailable",
                                       resource="devicetaintrules")
        return seen == value

    await kube.wait_for(reached, timeout,
                        f"kpysched_informer_unavailable{{resource=devicetaintrules}} {value}")


async def test_without_the_device_taint_rules_rule_kpysched_is_ready_schedules_and_warns(
    cluster: ClusterState, api: client.ApiClient, namespace: str, identity: Identity,
    nodes_to_clean: list[str], tmp_path: Path,
) -> None:
    assert cluster.release == "1.37", cluster.kubernetes_version
    rules = deploy_cluster_role_rules()
    assert not any("devicetaintrules" in r.get("resources", ()) for r in rules), (
        "deploy/rbac.yaml grants devicetaintrules: this test needs an RBAC without it")
    await identity.create_account()
    await identity.bind("deploy", rules)
    await kube.wait_for(lambda: identity.allowed("list", "", "pods"), WAIT_SECONDS,
                        "the authorizer to see deploy/'s rules bound")
    assert not await identity.allowed("list", "resource.k8s.io", "devicetaintrules")

    scheduler = f"kpysched-{namespace}"
    config = scheduler_config([{"schedulerName": scheduler}],
                              leaderElection={"leaderElect": False})
    kubeconfig = await identity.kubeconfig(cluster, tmp_path / "kubeconfig")
    (node,) = await kube.create_nodes(api, 1, prefix="optional",
                                      labels={"kpysched-test": namespace})
    nodes_to_clean.append(node)
    pod = kube.pod_body("placed", scheduler_name=scheduler,
                        node_selector={"kpysched-test": namespace})

    # start() returns on scheduler.started, which comes only after every informer synced.
    with KpyschedProcess(cluster, config, kubeconfig=str(kubeconfig)) as kp:
        context = f"last lines of {kp.log_path}:\n{log_tail(kp.log_path)}"
        status, body = await asyncio.to_thread(kp.get, "/readyz")
        assert status == 200, f"/readyz {status}: {body}; {context}"
        await kube.create_pod(api, namespace, pod)
        assert await kube.wait_bound(api, namespace, ["placed"], WAIT_SECONDS) == {
            "placed": node}

        warnings = [e for e in kp.log_events()
                    if e.get("event") == "informer.optional_unavailable"]
        assert len(warnings) == 1, f"{warnings}; {context}"
        (warning,) = warnings
        assert warning["level"] == "warning", warning
        assert warning["resource"] == "devicetaintrules", warning
        assert warning["status"] == 403, warning
        assert identity.user in warning["reason"], warning
        assert "reads them as none" in warning["meaning"], warning
        assert "grant" in warning["action"], warning
        assert "devicetaintrules" in warning["action"], warning
        await until_gauge(kp, 1.0, WAIT_SECONDS)

        # The operator grants the rule: kpysched lists the rules without a restart.
        await identity.bind("device-taint-rules", [DEVICE_TAINT_RULES])
        await kube.wait_for(
            lambda: identity.allowed("list", "resource.k8s.io", "devicetaintrules"),
            WAIT_SECONDS, "the authorizer to see the devicetaintrules rule bound")

        async def available() -> bool:
            return any(e.get("event") == "informer.optional_available"
                       and e.get("resource") == "devicetaintrules"
                       for e in kp.log_events())

        await kube.wait_for(available, GRANTED_SECONDS,
                            f"informer.optional_available; {context}")
        await until_gauge(kp, 0.0, WAIT_SECONDS)
        assert kp.process is not None and kp.process.poll() is None
