"""`kpysched explain [NAMESPACE/]POD` (also run as `kubectl kpysched explain`, through
kpysched.cli.kubectl_plugin)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import msgspec

from kpysched.explain.client import (
    Target,
    UnreachableError,
    context_namespace,
    fetch,
)
from kpysched.explain.render import DEFAULT_TOP, render
from kpysched.explain.suggesting import pending, suggest
from kpysched.suggest.report import render_suggestions

EXIT_EXPLAINED: Final = 0
EXIT_NOT_SEEN: Final = 1
EXIT_USAGE: Final = 2
EXIT_UNREACHABLE: Final = 3

DESCRIPTION = """\
Why the scheduler placed a pod where it did, or why it is pending, from the decisions
the leading kpysched recorded when it tried the pod (the last --decision-records
attempts, kept in its memory): the outcome and the FailedScheduling text; the nodes
each Filter plugin rejected, with counts (those of the FailedScheduling event) and
examples; the top-scored nodes with each Score plugin's normalised score times its
weight, the totals and ties; preemption candidates, their victims and the criterion
that chose.

The leader is asked through the API server, with your kubeconfig: GET
/apis/decisions.kpysched.io/v1alpha1/namespaces/NAMESPACE/pods/POD, an aggregated API
the chart registers (decisions.endpoint=true). Your credential goes to the API server
only; it authenticates you and RBAC decides: you need get on pods.decisions.kpysched.io
in the pod's namespace (the chart aggregates it to the view, edit and admin roles).
`kubectl get --raw` on that path gives the same records. --scheduler-url asks a
scheduler you name directly (a local run, or kubectl port-forward), verifying its
certificate against --scheduler-ca.
"""

EPILOG = """\
exit codes:
  0  the pod's decisions were shown
  1  the scheduler kept no decision for the pod (never tried by this leader, or evicted)
  2  usage error
  3  the scheduler could not be asked (the API not registered or not available,
     unreachable, or not authorized)

examples:
  kpysched explain default/web-0
  kpysched explain -n shop web-0 -o json
  kubectl kpysched explain shop/web-0 --context prod
  kubectl get --raw /apis/decisions.kpysched.io/v1alpha1/namespaces/shop/pods/web-0
  kpysched explain shop/web-0 --scheduler-url https://127.0.0.1:10259 \
      --scheduler-ca /var/run/kpysched/kpysched.crt
"""


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pod", metavar="[NAMESPACE/]POD")
    parser.add_argument("-n", "--namespace", help="the pod's namespace when POD has none "
                        "(default: the context's namespace, else default)")
    parser.add_argument("--kubeconfig", type=Path,
                        help="kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table",
                        help="table (default) or json: the records as the scheduler "
                             "serves them")
    parser.add_argument("--top", type=int, default=DEFAULT_TOP,
                        help=f"scored nodes shown (default {DEFAULT_TOP})")
    parser.add_argument("--all", action="store_true", dest="every_attempt",
                        help="show every kept attempt in full, not only the latest")
    parser.add_argument("--scheduler-url",
                        help="ask the scheduler here (e.g. https://127.0.0.1:10259, a "
                             "local run) instead of through the API server; your "
                             "kubeconfig's credential is sent there")
    parser.add_argument("--scheduler-ca", type=Path,
                        help="CA that signed that scheduler's serving certificate (default: "
                             "the system's trust store; never unverified)")
    # Accepted so existing scripts keep working; explain reads nothing from the Lease now
    # (kpysched.explain.client says why).
    for flag in ("--lease-name", "--lease-namespace"):
        parser.add_argument(flag, help=argparse.SUPPRESS)
    parser.add_argument("--request-timeout", type=float, default=10.0, metavar="SECONDS",
                        help="per request (default 10)")
    parser.add_argument("--no-suggest", action="store_false", dest="suggest",
                        help="for a pending pod, do not look for the changes that would "
                             "make it fit (they need read access to the cluster's nodes "
                             "and pods, and a simulation of it)")
    parser.add_argument("--config", dest="scheduler_config",
                        help="the scheduler's KubeSchedulerConfiguration, for checking "
                             "suggested changes (default: upstream's default profile)")
    parser.add_argument("--emulated-version", metavar="1.MINOR",
                        help="check suggested changes as this kube-scheduler release (1.36 "
                             "or 1.37; default: the cluster's, from its /version)")
    return parser


def main(args: Sequence[str], prog: str = "kpysched explain") -> int:
    parser = _parser(prog)
    try:
        options = parser.parse_args(list(args))
    except SystemExit as stop:  # --help (0) or a usage error (2)
        return int(stop.code or 0)
    namespace, slash, name = options.pod.rpartition("/")
    if not slash:
        namespace = options.namespace or context_namespace(options.kubeconfig,
                                                           options.context)
    elif options.namespace and options.namespace != namespace:
        parser.print_usage(sys.stderr)
        print(f"{prog}: error: {options.pod} names namespace {namespace}, -n says "
              f"{options.namespace}", file=sys.stderr)
        return EXIT_USAGE
    if not namespace or not name:
        parser.print_usage(sys.stderr)
        print(f"{prog}: error: expected NAMESPACE/POD or POD, got {options.pod!r}",
              file=sys.stderr)
        return EXIT_USAGE
    if options.lease_name or options.lease_namespace:
        print(f"{prog}: --lease-name/--lease-namespace are ignored: the scheduler is asked "
              "through the API server, never at an address read from its Lease",
              file=sys.stderr)
    target = Target(options.kubeconfig, options.context, options.scheduler_url,
                    options.scheduler_ca, options.request_timeout)
    try:
        answer = asyncio.run(fetch(target, namespace, name))
    except UnreachableError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return EXIT_UNREACHABLE
    if options.suggest and answer.status == 200 and pending(answer.body):
        found = asyncio.run(suggest(options, namespace, name))
        if isinstance(found, str):
            print(f"{prog}: no suggestions: {found}", file=sys.stderr)
        else:
            answer.body["suggestions"] = found
    if options.output == "json":
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(answer.body)).decode() + "\n")
    elif answer.status == 200:
        text = render(answer.body, options.top, options.every_attempt)
        suggestions = render_suggestions(answer.body.get("suggestions"))
        if suggestions:
            text += ("" if text.endswith("\n\n") else "\n") + "\n".join(suggestions) + "\n"
        sys.stdout.write(text)
    if answer.status == 200:
        print(f"({prog}: asked {answer.source})", file=sys.stderr)
    else:
        print(f"The scheduler ({answer.source}) kept no decision for pod {namespace}/{name}:"
              " it has not tried this pod since it became leader (a pod for another "
              "scheduler name, or one bound before), or the record was evicted "
              "(--decision-records).", file=sys.stderr)
        return EXIT_NOT_SEEN
    return EXIT_EXPLAINED
