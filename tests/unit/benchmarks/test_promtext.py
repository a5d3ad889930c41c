"""promtext's counter deltas, as the benchmark runner and the backlog soak count the
API server's requests by kind."""

from __future__ import annotations

from benchmarks import promtext
from benchmarks.runner import _writes_by_kind

BEFORE = promtext.parse("""
apiserver_request_total{code="201",resource="pods",subresource="binding",verb="POST"} 10
apiserver_request_total{code="200",resource="pods",subresource="status",verb="PATCH"} 4
apiserver_request_total{code="200",resource="pods",verb="LIST"} 7
""")
AFTER = promtext.parse("""
apiserver_request_total{code="201",resource="pods",subresource="binding",verb="POST"} 13
apiserver_request_total{code="200",resource="pods",subresource="status",verb="PATCH"} 4
apiserver_request_total{code="409",resource="pods",subresource="status",verb="PATCH"} 2
apiserver_request_total{code="200",resource="pods",verb="LIST"} 9
apiserver_request_total{code="201",resource="pods",verb="POST"} 50
apiserver_request_total{code="200",resource="leases",verb="PUT"} 6
""")


def test_requests_by_kind_sums_codes_and_leaves_out_what_did_not_grow() -> None:
    assert promtext.delta_by(BEFORE, AFTER, "apiserver_request_total",
                             promtext.request_kind) == {
        "LIST pods": 2.0, "PATCH pods/status": 2.0, "POST pods": 50.0,
        "POST pods/binding": 3.0, "PUT leases": 6.0}


def test_writes_by_kind_leave_out_reads_pod_creates_and_leases_and_name_refusals() -> None:
    assert _writes_by_kind(BEFORE, AFTER) == {
        "PATCH pods/status (409)": 2.0, "POST pods/binding": 3.0}
