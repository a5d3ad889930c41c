"""`extenders:` as upstream's v1 Extender: fields, defaults, validateExtenders, and
how the effective configuration (--write-config-to, /configz) shows them."""

from __future__ import annotations

from typing import Any

import pytest

from kpysched.config import ConfigError, build_profiles, parse_config
from kpysched.config.written import effective_document
from kpysched.framework.registry import full_registry
from kpysched.plugins import IN_TREE
from tests.unit.config.fakes import document


def _problems(extenders: list[dict[str, Any]]) -> tuple[str, ...]:
    with pytest.raises(ConfigError) as caught:
        parse_config(document(extenders=extenders))
    return caught.value.problems


def test_every_field_is_read() -> None:
    config = parse_config(document(extenders=[{
        "urlPrefix": "https://gpu:8443/scheduler", "filterVerb": "filter",
        "preemptVerb": "preempt", "prioritizeVerb": "prioritize", "weight": 3,
        "bindVerb": "bind", "enableHTTPS": True, "httpTimeout": "250ms",
        "nodeCacheCapable": True, "ignorable": True,
        "tlsConfig": {"insecure": False, "serverName": "gpu", "certFile": "/c", "keyFile": "/k",
                      "caFile": "/ca", "certData": "Y2VydA==", "keyData": "a2V5",
                      "caData": "Y2E="},
        "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
    }]))
    (extender,) = config.extenders
    assert (extender.url_prefix, extender.filter_verb, extender.preempt_verb,
            extender.prioritize_verb, extender.weight, extender.bind_verb) == (
        "https://gpu:8443/scheduler", "filter", "preempt", "prioritize", 3, "bind")
    assert extender.enable_https and extender.node_cache_capable and extender.ignorable
    assert extender.http_timeout == 0.25
    assert extender.tls_config is not None and extender.tls_config.ca_data == "Y2E="
    assert extender.managed_resources[0].ignored_by_scheduler


@pytest.mark.parametrize("timeout", [pytest.param({}, id="unset"),
                                     pytest.param({"httpTimeout": "0s"}, id="zero")])
def test_http_timeout_defaults_to_upstreams_five_seconds(timeout: dict[str, str]) -> None:
    config = parse_config(document(extenders=[{"urlPrefix": "http://e", **timeout}]))
    assert config.extenders[0].http_timeout == 5.0


@pytest.mark.parametrize(("extenders", "expected"), [
    pytest.param([{"urlPrefix": "http://e", "prioritizeVerb": "p"}],
                 ["extenders[0].weight: must have a positive weight applied to it (got 0)"],
                 id="prioritizer-without-weight"),
    pytest.param([{"urlPrefix": "http://e", "prioritizeVerb": "p", "weight": -1}],
                 ["extenders[0].weight: must have a positive weight applied to it (got -1)"],
                 id="negative-weight"),
    pytest.param([{"urlPrefix": "http://a", "bindVerb": "bind"},
                  {"urlPrefix": "http://b", "bindVerb": "bind"}],
                 ["extenders: only one extender can implement bind, found 2"], id="two-binders"),
    pytest.param([{"urlPrefix": "http://a", "managedResources": [{"name": "example.com/gpu"}]},
                  {"urlPrefix": "http://b", "managedResources": [{"name": "example.com/gpu"}]}],
                 ['extenders[1].managedResources[0].name: duplicate extender managed resource '
                  'name (got "example.com/gpu")'], id="resource-managed-twice"),
    pytest.param([{"urlPrefix": "http://a", "managedResources": [{"name": "cpu"}]}],
                 ['extenders[0].managedResources[0].name: is an invalid extended resource name '
                  '(got "cpu")'], id="native-resource"),
    pytest.param([{"urlPrefix": "http://a",
                   "managedResources": [{"name": "kubernetes.io/gpu"}]}],
                 ['extenders[0].managedResources[0].name: is an invalid extended resource name '
                  '(got "kubernetes.io/gpu")'], id="kubernetes-io-namespace"),
    pytest.param([{"urlPrefix": "http://a", "managedResources": [{"name": "Example.com/-gpu"}]}],
                 ['extenders[0].managedResources[0].name: prefix part must be a lowercase '
                  'RFC 1123 subdomain (got "Example.com/-gpu")',
                  "extenders[0].managedResources[0].name: name part must consist of "
                  "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                  'alphanumeric character (got "Example.com/-gpu")'], id="not-qualified"),
    pytest.param([{"urlPrefix": "http://a", "tlsConfig": {"caData": "not base64!"}}],
                 ['extenders[0].tlsConfig.caData: must be base64-encoded data '
                  '(got "not base64!")'], id="ca-data-not-base64"),
    pytest.param([{"urlPrefix": "http://a", "enableHttps": True}],
                 ['extenders[0]: unknown field "enableHttps"'], id="https-spelt-wrong"),
])
def test_invalid(extenders: list[dict[str, Any]], expected: list[str]) -> None:
    assert list(_problems(extenders)) == expected


def test_ignored_resources_replace_node_resources_fit_ignored_resources() -> None:
    config = parse_config(document(
        extenders=[{"urlPrefix": "http://e", "managedResources": [
            {"name": "example.com/gpu", "ignoredByScheduler": True},
            {"name": "example.com/fpga"}]}],
        profiles=[{"schedulerName": "a", "pluginConfig": [
            {"name": "NodeResourcesFit", "args": {"ignoredResources": ["example.com/other"]}}]},
            {"schedulerName": "b"}]))
    profiles = build_profiles(config, full_registry(IN_TREE))
    assert [profile.args["NodeResourcesFit"].ignored_resources  # type: ignore[union-attr]
            for profile in profiles] == [["example.com/gpu"], ["example.com/gpu"]]


def test_effective_document_writes_extenders_as_upstreams_json() -> None:
    config = parse_config(document(extenders=[{
        "urlPrefix": "http://e", "filterVerb": "filter", "enableHTTPS": True,
        "tlsConfig": {"caData": "Y2E="},
        "managedResources": [{"name": "example.com/gpu"}]}]))
    written = effective_document(config, None)["extenders"]
    assert written == [{"urlPrefix": "http://e", "filterVerb": "filter", "enableHTTPS": True,
                        "tlsConfig": {"caData": "Y2E="}, "httpTimeout": "5s",
                        "managedResources": [{"name": "example.com/gpu"}]}]
    assert parse_config(document(extenders=written)) == config
