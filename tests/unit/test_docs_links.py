"""README is a front door, not a manual, and no page links to a file that is not there.

Every Markdown link (and image) in README.md and docs/*.md to a local file must name an
existing file, and a `#fragment` must name a heading of that file, as GitHub makes
anchors. README stays at most 150 lines (issue 40); the rest lives in docs/ by topic.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.readme_commands import ROOT, local_run

README_MAX_LINES = 150
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# [text](target) and ![alt](target); a target ends at whitespace (an optional title
# follows) or at the closing parenthesis. Code spans are removed first.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"`[^`\n]*`")
FENCED = re.compile(r"^```.*?^```", re.M | re.S)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, ...


def local_links(text: str) -> list[str]:
    prose = CODE_SPAN.sub("", FENCED.sub("", text))
    return [target for target in LINK.findall(prose) if not EXTERNAL.match(target)]


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCED.sub("", path.read_text())
    return {anchor(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_local_link_names_an_existing_file(page: Path) -> None:
    broken = []
    for target in local_links(page.read_text()):
        file_part, _, fragment = target.partition("#")
        destination = (page.parent / file_part).resolve() if file_part else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif fragment and destination.suffix == ".md" and fragment not in anchors(destination):
            broken.append(f"{target}: no heading makes #{fragment}")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


def test_the_link_check_sees_a_broken_link() -> None:
    text = "See [a](docs/absent.md), `[b](in-code.md)`, [c](https://example.com) and ![d](x.png)."
    assert local_links(text) == ["docs/absent.md", "x.png"]
    assert anchor("Secure serving") == "secure-serving"
    assert anchor("What if? `kpysched simulate`") == "what-if-kpysched-simulate"


def test_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README has {len(lines)} lines"


def test_readme_shows_the_local_run_the_e2e_test_runs() -> None:
    run, pod_lines, explain = local_run()
    assert run == "bash scripts/run-local.sh"
    assert pod_lines[0] == "scripts/kubectl apply -f scripts/hello-pod.yaml"
    assert explain[0].startswith(".venv/bin/kpysched explain default/hello ")
