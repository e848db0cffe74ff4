"""Every relative link of docs/*.md and README.md resolves: the file exists and a `#anchor` names a
heading of it, under GitHub's rules (lowercase; markup dropped; punctuation but '-' and '_' dropped;
each space a '-'; a repeated heading gets -1, -2, ...). Links to other sites are not followed."""
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) or [text](target "title"); an image ![..](..) too. Not inside `code`.
LINK = re.compile(r"\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _unfenced(text: str):
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            yield n, line


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)   # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text)                         # inline HTML
    text = text.replace("`", "").replace("*", "")
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)                        # \w keeps letters, digits, '_'
    return text.replace(" ", "-")


@functools.cache  # a file is linked to many times: read and parsed once
def anchors(path: Path) -> set:
    seen: dict = {}
    out = set()
    for _, line in _unfenced(path.read_text(encoding="utf-8")):
        m = HEADING.match(line)
        if m:
            base = slug(m.group(2))
            n = seen.get(base, 0)
            out.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return out


def broken_links(path: Path, root: Path = ROOT) -> list:
    """Each broken link of `path`, named relative to `root`."""
    bad = []
    for n, line in _unfenced(path.read_text(encoding="utf-8")):
        line = re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), line)   # no link inside `code`
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):   # http:, mailto:, ...
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(root)}:{n}: {target}"
            if not dest.exists():
                bad.append(f"{where}: no file {dest.relative_to(root) if dest.is_relative_to(root) else dest}")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                bad.append(f"{where}: no heading with anchor #{anchor} in {dest.relative_to(root)}")
    return bad


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc):
    bad = broken_links(doc)
    assert not bad, "\n".join(bad)


def test_the_checker_sees_a_broken_link_and_anchor(tmp_path):
    (tmp_path / "b.md").write_text("# Title\n\n## What the H100 taught the model, and where\n\n"
                                   "## `memory.py`: the (L2) rule\n\n## Twice\n\n## Twice\n")
    a = tmp_path / "a.md"
    a.write_text("[ok](b.md#what-the-h100-taught-the-model-and-where) [ok](b.md#memorypy-the-l2-rule)\n"
                 "[ok](b.md#twice-1) [ok](#local) [web](https://example.com/x#y)\n"
                 "`[not a link](nowhere.md)`\n```\n[in code](nowhere.md)\n```\n"
                 "## Local\n"
                 "[bad](b.md#twice-2) [bad](missing.md) [bad](#nowhere)\n")
    bad = broken_links(a, root=tmp_path)
    assert len(bad) == 3, bad
    assert "#twice-2" in bad[0] and "missing.md" in bad[1] and "#nowhere" in bad[2]
