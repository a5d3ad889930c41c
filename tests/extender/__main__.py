"""Run the test extender as a process of its own (the benchmarks do, so that its
work is not counted in theirs):

    python -m tests.extender --kubeconfig K --delay-ms 2 --route bench

prints its base URL on the first line of stdout and serves until it is killed."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading

from tests.extender.server import ExtenderServer, Fault, Route


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.extender")
    parser.add_argument("--kubeconfig", help="for node names, pod UIDs and bindings")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--route", action="append", default=[],
                        help="a URL prefix to answer (repeatable; default 'extender')")
    parser.add_argument("--delay-ms", type=float, default=0.0,
                        help="a fixed delay before every filter and prioritize answer")
    args = parser.parse_args(argv)
    delay = Fault(delay=args.delay_ms / 1000.0)
    routes = {name: Route(faults={"filter": delay, "prioritize": delay})
              for name in args.route or ["extender"]}
    server = ExtenderServer(routes, args.kubeconfig, port=args.port, record=False)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with server:
        print(server.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
