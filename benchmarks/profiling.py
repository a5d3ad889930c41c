"""Sampling profile of kpysched during the measured phase, summarised per pod.

py-spy attaches to the running scheduler process from outside (no wrapper, no
code change, `--nonblocking` so the process is never paused) and records
collapsed stacks of on-CPU samples. Each stack is put in one bucket of the
scheduler's pipeline by the first rule below that matches one of its frames, so
a sample taken in numpy under a Filter plugin counts as "filter", and one taken
in aiohttp under the binding task counts as "bind".
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

SAMPLE_RATE = 200

Frame = tuple[str, str]  # (function, file)
Rule = tuple[str, Callable[[Frame], bool]]


def _file(*fragments: str) -> Callable[[Frame], bool]:
    return lambda frame: any(fragment in frame[1] for fragment in fragments)


def _function(file_fragment: str, *names: str) -> Callable[[Frame], bool]:
    """py-spy names methods `Class.method`; match on the method name."""
    return lambda frame: (file_fragment in frame[1]
                          and frame[0].rsplit(".", 1)[-1] in names)


CATEGORIES: tuple[Rule, ...] = (
    ("events (Scheduled / FailedScheduling, status patches)",
     _file("kpysched/writes/event_recorder.py", "kpysched/writes/pod_status.py")),
    ("bind (binding cycle + API call)",
     lambda f: _file("kpysched/writes/binding.py")(f)
     or _function("kpysched/scheduling/binding_cycle.py", "_run", "_bind_steps")(f)),
    ("preemption", _file("kpysched/writes/preemption.py", "plugins/default_preemption")),
    ("event handlers (cache + queue updates)", _file("kpysched/scheduling/event_handlers.py")),
    ("watch read + decode (informers)", _file("kpysched/informers/")),
    ("snapshot", lambda f: _file("kpysched/cache/snapshot.py")(f)
     or _function("kpysched/cache/cache.py", "update_snapshot")(f)),
    ("filter (PreFilter + Filter)",
     _function("kpysched/", "run_pre_filter", "_run_pre_filter", "filter_mask", "run_filter",
               "_find_nodes_that_fit", "run_filter_with_nominated",
               "_evaluate_nominated_node")),
    ("score (PreScore + Score + Normalize + select)",
     _function("kpysched/", "run_pre_score", "_run_pre_score", "run_score", "_run_score",
               "run_score_totals", "_select_host")),
    ("assume + Reserve + Permit",
     _function("kpysched/", "_assume_and_bind", "run_reserve", "_run_reserve", "run_permit",
               "_run_permit")),
    ("unschedulable handling (PostFilter, diagnosis, requeue)",
     _function("kpysched/scheduling/attempt.py", "unschedulable", "failed", "_requeue",
               "post_filter")),
    ("queue", _file("kpysched/queue/")),
    ("metrics + health server", _file("kpysched/metrics.py", "prometheus_client",
                                      "kpysched/serving/server.py")),
    ("scheduling cycle (other)", _file("kpysched/scheduling/scheduler.py",
                                       "kpysched/scheduling/attempt.py",
                                       "kpysched/scheduling/binding_cycle.py",
                                       "kpysched/scheduling/algorithm.py")),
    # aiohttp with trust_env looks up proxy variables and ~/.netrc for every request,
    # in the default thread pool; the futures that carry the answer back run here too.
    ("API client: per-request proxy + .netrc lookups (aiohttp trust_env)",
     lambda f: _function("aiohttp/", "netrc_from_env", "get_env_proxy_for_url",
                         "proxies_from_env", "_get_netrc_auth")(f)
     or _function("asyncio/futures.py", "_copy_future_state", "_call_set_state",
                  "_set_state")(f)
     or _function("concurrent/futures/thread.py", "_worker")(f)),
    ("API client: HTTP write + read outside a task (http11 / aiohttp, SSL)",
     _file("kpysched/api/http11.py", "aiohttp/", "ssl.py")),
)
# With uvloop the loop itself is native code: its I/O, SSL and callback dispatch
# show up as samples whose innermost Python frame is asyncio's Runner.run.
EVENT_LOOP = "event loop (uvloop native: sockets, SSL, dispatch)"
OTHER = "HTTP client internals and other Python"


def parse_frame(text: str) -> Frame:
    """'function (path/file.py:123)' -> (function, path/file.py)."""
    name, _, location = text.rpartition(" (")
    if not name:
        return text, ""
    return name, location.rstrip(")").rsplit(":", 1)[0]


def categorise(stack: list[Frame]) -> str:
    for category, matches in CATEGORIES:
        if any(matches(frame) for frame in stack):
            return category
    if stack[-1][0] == "Runner.run":
        return EVENT_LOOP
    return OTHER


def summarise(collapsed: str) -> dict[str, object]:
    """Samples by category and the hottest leaf functions of py-spy's raw output."""
    categories: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    total = 0
    for line in collapsed.splitlines():
        stack_text, _, count_text = line.rpartition(" ")
        if not stack_text or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [parse_frame(part) for part in stack_text.split(";")]
        # py-spy puts "process ..." and "thread ..." pseudo-frames first.
        frames = [f for f in frames if f[1]]
        if not frames:
            continue
        total += count
        categories[categorise(frames)] += count
        function, path = frames[-1]
        leaves[f"{function} ({_short(path)})"] += count
    return {"samples": total, "rate": SAMPLE_RATE,
            "categories": dict(categories.most_common()),
            "top_leaf_functions": leaves.most_common(20)}


def _short(path: str) -> str:
    for marker in ("site-packages/", "/kpysched/", "/lib/python3"):
        if marker in path:
            tail = path.split(marker, 1)[1]
            return ("kpysched/" + tail) if marker == "/kpysched/" else tail
    return path


def py_spy() -> str:
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.exists() else shutil.which("py-spy")
    if found is None:
        raise RuntimeError("profiling needs py-spy: `.venv/bin/pip install py-spy`")
    return found


class Profiler:
    """Records the process `pid` from start() to stop() into `directory`."""

    def __init__(self, pid: int, directory: Path) -> None:
        self.pid = pid
        directory.mkdir(parents=True, exist_ok=True)
        self.output = directory / f"kpysched-{pid}.collapsed.txt"
        self.log = directory / f"py-spy-{pid}.log"
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        with self.log.open("wb") as log:
            self._process = await asyncio.create_subprocess_exec(
                py_spy(), "record", "--pid", str(self.pid), "--rate", str(SAMPLE_RATE),
                "--format", "raw", "--output", str(self.output), "--gil",
                stdout=log, stderr=log, stdin=asyncio.subprocess.DEVNULL)
        await asyncio.sleep(1.0)  # let it attach before the measured phase begins
        if self._process.returncode is not None:
            raise RuntimeError(f"py-spy exited at once: {self.log.read_text()[-800:]}")

    async def stop(self) -> dict[str, object]:
        assert self._process is not None
        if self._process.returncode is None:
            self._process.send_signal(signal.SIGINT)
            await asyncio.wait_for(self._process.wait(), 60)
        if not self.output.exists():
            raise RuntimeError(f"py-spy wrote no profile: {self.log.read_text()[-800:]}")
        summary = summarise(self.output.read_text())
        summary["collapsed_stacks"] = str(self.output)
        return summary
