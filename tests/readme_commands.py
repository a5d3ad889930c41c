"""The shell commands README.md shows, read from its fenced blocks.

tests/e2e/test_readme.py runs the local-run section's lines exactly as written, so the
README cannot drift from what works; tests/unit/test_docs_links.py checks the rest of it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
LOCAL_RUN_SECTION = "Run it locally"

_FENCE = re.compile(r"^```(\w*)\s*$")


def section(text: str, title: str) -> str:
    """The body of the `## title` section, up to the next `## ` heading."""
    match = re.search(rf"^## {re.escape(title)}\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    if match is None:
        raise LookupError(f"README has no '## {title}' section")
    return match.group(1)


def shell_blocks(text: str) -> list[list[str]]:
    """Each ```sh block's commands, in order: a line ending in a backslash is joined
    with the next, blank lines dropped (comments are left for the shell)."""
    blocks: list[list[str]] = []
    inside, is_shell, lines = False, False, []
    for line in text.splitlines():
        fence = _FENCE.match(line.strip())
        if fence is None:
            if inside and is_shell:
                lines.append(line)
        elif not inside:
            inside, is_shell, lines = True, fence.group(1) in ("sh", "bash", "shell"), []
        else:
            if is_shell:
                blocks.append(_join_continuations(lines))
            inside = False
    if inside:
        raise ValueError("README has an unclosed fenced block")
    return blocks


def _join_continuations(lines: list[str]) -> list[str]:
    commands: list[str] = []
    pending = ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1].rstrip() + " "
            continue
        command = (pending + line.strip()).strip()
        pending = ""
        if command:
            commands.append(command)
    if pending.strip():
        commands.append(pending.strip())
    return commands


def local_run() -> tuple[str, list[str], list[str]]:
    """README's local run: the run command, the example pod's kubectl lines, the explain
    command (the section's three shell blocks, in that order)."""
    blocks = shell_blocks(section(README.read_text(), LOCAL_RUN_SECTION))
    if len(blocks) != 3 or len(blocks[0]) != 1:
        raise ValueError(
            f"README's '{LOCAL_RUN_SECTION}' should show three shell blocks (the run command "
            f"alone, the example pod's kubectl lines, the explain command); found {blocks}")
    return blocks[0][0], blocks[1], blocks[2]
