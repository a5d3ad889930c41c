"""How far along a long command is: a tqdm bar on a terminal, plain lines elsewhere.

The benchmark runs, the soak and the harness's long steps count something towards a
known total (pods bound, seconds of a plan, binaries built). On a terminal that is a
live bar (tqdm: rate, elapsed, time left); in CI logs and files, where a redrawn bar
is noise, a plain line at most every `plain_every` seconds and one at the end.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

from tqdm import tqdm


class Progress:
    def __init__(self, description: str, total: float | None, unit: str, *,
                 stream: IO[str] | None = None, plain_every: float = 10.0,
                 terminal: bool | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._description = description
        self._total = total
        self._unit = unit
        self._plain_every = plain_every
        self._started = time.monotonic()
        self._last_line = self._started
        self._done: float = 0
        self._notes = ""
        on_terminal = self._stream.isatty() if terminal is None else terminal
        self._bar: tqdm[Any] | None = tqdm(
            total=total, desc=description, unit=unit, file=self._stream,
            dynamic_ncols=True, leave=True) if on_terminal else None

    def update_to(self, done: float, **notes: object) -> None:
        """`done` of the total so far; `notes` are shown beside it (faults=3 ...)."""
        self._done = done
        self._notes = ", ".join(f"{key}={value}" for key, value in notes.items())
        if self._bar is not None:
            self._bar.n = done
            if notes:
                self._bar.set_postfix_str(self._notes, refresh=False)
            self._bar.refresh()
            return
        now = time.monotonic()
        if now - self._last_line >= self._plain_every:
            self._last_line = now
            self._line(now)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            return
        self._line(time.monotonic())

    def _line(self, now: float) -> None:
        elapsed = now - self._started
        rate = self._done / elapsed if elapsed > 0 else 0.0
        of_total = f"/{self._total:g}" if self._total is not None else ""
        notes = f", {self._notes}" if self._notes else ""
        print(f"{self._description}: {self._done:g}{of_total} {self._unit} "
              f"in {elapsed:.0f} s ({rate:.1f} {self._unit}/s{notes})",
              file=self._stream, flush=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
