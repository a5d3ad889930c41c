"""The differential suite's stateless scenarios as one batch: kube-scheduler and
kpysched started once for ~100 scenarios on one cluster, instead of once per
scenario file and a wait per scenario (issue 34: the suite must fit CI once per
release).

- layout.py: two copies of each scenario (one per scheduler), nodes and namespace of
  their own, the incoming pod pinned to its copy's nodes (pinning.py);
- runner.py: make the batch, start both schedulers, wait for every decision, read the
  outcomes by role;
- ties.py: upstream attempts whose best score was shared (read from its log),
  which make a scenario invalid;
- scenarios.py: the batch (scenarios.ALL and more).

The release is the cluster's (tests/cluster/releases.py): kube-scheduler is that
release's binary, and kpysched, started with no version flag, takes the release the
API server reports. test_batch.py runs on the default release (1.37),
test_batch_1_36.py on 1.36; for another release than the default:

    KPYSCHED_TEST_RELEASE=1.36 .venv/bin/pytest -q -p no:cacheprovider \\
        tests/e2e/differential/batch/test_batch.py
"""
