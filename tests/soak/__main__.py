"""`python -m tests.soak [--plan ci|long|mixed|mixed-short] [--nodes N] [--duration S] [--rate R]
[--faults a,b|none] [--seed N] [--out DIR]`: run a soak and write its report.

Exits 0 when every invariant held, 1 otherwise; the report (report.json and
report.md) goes to --out either way, with the kpysched replicas' logs beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
from pathlib import Path

from tests.soak.plan import ALL_FAULTS, PLANS
from tests.soak.run import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__)
    parser.add_argument("--plan", choices=sorted(PLANS), default="ci")
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--duration", type=float, help="seconds of churn")
    parser.add_argument("--rate", type=float, help="pods created per second")
    parser.add_argument("--faults",
                        help=f"comma-separated, or 'none' (all: {','.join(ALL_FAULTS)})")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--out", type=Path, default=Path("soak-report"))
    args = parser.parse_args(argv)
    plan = PLANS[args.plan]
    changes: dict[str, object] = {}
    for name, field in (("nodes", "nodes"), ("duration", "duration_seconds"),
                        ("rate", "rate"), ("seed", "seed")):
        if getattr(args, name) is not None:
            changes[field] = getattr(args, name)
    if args.faults is not None:
        faults = () if args.faults == "none" else tuple(args.faults.split(","))
        unknown = set(faults) - set(ALL_FAULTS)
        if unknown:
            parser.error(f"--faults: unknown {sorted(unknown)}; known: {', '.join(ALL_FAULTS)}")
        changes["faults"] = faults
    plan = plan.with_(**changes)
    directory = Path(tempfile.mkdtemp(prefix="kpysched-soak-")) / "cluster"
    # SIGTERM (timeout, CI) unwinds like Ctrl-C, so the cluster and schedulers stop.
    signal.signal(signal.SIGTERM, _interrupt)
    report = asyncio.run(run(plan, directory, args.out))
    (args.out / "report.json").write_text(report.to_json())
    (args.out / "report.md").write_text(report.to_markdown())
    print(report.to_markdown())
    return 1 if report.verdict() else 0


def _interrupt(signum: int, _: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    sys.exit(main())
