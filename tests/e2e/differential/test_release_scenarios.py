"""The release scenarios' own premises, checked without a cluster: every scenario has
an outcome for each release the harness runs, no two of them can be met by one
outcome (so following the wrong release fails), and each batch expectation names a
scenario the batch runs."""

from __future__ import annotations

import itertools
import json
import ssl
import urllib.error
import urllib.request

import pytest

from tests.cluster import releases
from tests.e2e.differential.batch.scenarios import BATCH
from tests.e2e.differential.model import Outcome
from tests.e2e.differential.release_bind_once import bind_once_webhook
from tests.e2e.differential.release_run import Expected, check_release
from tests.e2e.differential.release_scenarios import BATCH_EXPECTATIONS, CASES

EXPECTATIONS = {**{c.name: dict(c.expected) for c in CASES}, **BATCH_EXPECTATIONS}


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_each_release_has_an_outcome_no_other_release_shares(name: str) -> None:
    expected = EXPECTATIONS[name]
    assert set(expected) == set(releases.RELEASES)
    for (one, a), (other, b) in itertools.permutations(expected.items(), 2):
        assert a.excludes(b), f"{name}: {one} and {other} could give the same outcome"


def test_batch_expectations_name_batch_scenarios() -> None:
    assert set(BATCH_EXPECTATIONS) <= {s.name for s in BATCH}


def test_an_outcome_of_the_other_release_fails() -> None:
    expected = {"1.36": Expected("n0", lacks=("preemption:",)),
                "1.37": Expected("n0", holds=("preemption: found",))}
    newer = Outcome("n0", "0/2 nodes are available. preemption: found a placement")
    check_release("example", expected, "1.37", newer)
    with pytest.raises(AssertionError, match="note holds 'preemption:'"):
        check_release("example", expected, "1.36", newer)


def test_the_bind_once_webhook_fails_only_the_first_binding_of_a_pod() -> None:
    def post(url: str, context: ssl.SSLContext, name: str) -> tuple[int, dict[str, object]]:
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "request": {"uid": f"uid-{name}", "namespace": "ns", "name": name}}
        request = urllib.request.Request(url, data=json.dumps(review).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, context=context, timeout=10) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, {}

    with bind_once_webhook() as webhook:
        context = ssl.create_default_context(cadata=webhook.ca_bundle.decode())
        assert post(webhook.url, context, "a")[0] == 500
        status, answer = post(webhook.url, context, "a")
        assert status == 200
        assert answer["response"] == {"uid": "uid-a", "allowed": True}
        assert post(webhook.url, context, "b")[0] == 500
        configuration = webhook.configuration()
        assert configuration["webhooks"][0]["clientConfig"]["url"] == webhook.url
