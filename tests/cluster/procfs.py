"""What the kernel says of a process, read from /proc: its state and CPU counters
(/proc/<pid>/stat) and its memory (/proc/<pid>/status). The harness asks whether a
process is alive; the soak and the benchmarks measure a scheduler's memory and CPU."""

from __future__ import annotations

from pathlib import Path


def stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name, the state ("R", "S",
    "Z", ...) first; None once the process is gone.

    Split after the last ")": the command name may hold spaces and parentheses."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    _, closing, rest = text.rpartition(")")
    fields = rest.split()
    return fields if closing and fields else None


def status_kib(pid: int, field: str) -> int | None:
    """A /proc/<pid>/status field given in kB (VmRSS, VmHWM, ...); None once the
    process is gone or when it has no such field (a zombie has no memory)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key == field:
            return int(value.split()[0])
    return None


def machine_cpu_ticks() -> tuple[int, int]:
    """(idle, total) clock ticks of every CPU since boot, from /proc/stat's first line
    (idle counts iowait too; guest time is already in user and nice)."""
    first = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    ticks = [int(value) for value in first[1:9]]  # user nice system idle iowait irq softirq steal
    return ticks[3] + ticks[4], sum(ticks)
