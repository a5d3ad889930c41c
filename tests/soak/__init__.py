"""The reliability soak: churn, faults and invariants against a real cluster.

Two kpysched replicas with leader election and an upstream kube-scheduler share
KWOK nodes, as a secondary scheduler does in a real cluster. A bounded churn
generator creates and deletes pods of mixed shapes (`churn.py`), faults are injected
on a schedule (`fault_plan.py`), and a separate watch checks the invariants all the
while (`observer.py`): no pod bound twice or moved, no pending pod left without a
FailedScheduling event, no node overcommitted by kpysched's own placements. After
the churn stops, the leader's cache is compared with a fresh list. `run.py` ties it
together and `report.py` writes the figures.

`python -m tests.soak --plan mixed` (or `mixed-short`) adds Kueue admitting Jobs in
waves and Karpenter adding and removing nodes for them (`mixed.py`, `waves.py`), with
two checks of their own (`mixed_checks.py`): no admitted pod pending while a node has
room for it, and no more running in the ClusterQueue than its quota.

`python -m tests.soak --plan long` is the 30-minute run behind docs/reliability.md;
`tests/soak/test_soak.py` (marker `soak`, run by scripts/test.sh after the main
suite) is the three-minute form CI runs.
"""
