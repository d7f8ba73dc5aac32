"""The docs' navigation as a reader meets it: the changelog is a page (a link to
``CHANGELOG.md`` itself makes Sphinx offer a download), and pages with nothing
under them get no empty "Section Navigation" sidebar. How the header looks at
1280 and 800 px is checked in a browser, not here."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_changelog_is_a_page_of_the_docs():
    page = (DOCS / "changelog.md").read_text()
    assert "{include} ../CHANGELOG.md" in page
    for md in DOCS.glob("*.md"):
        links = re.findall(r"\]\(([^)]*CHANGELOG\.md)\)", md.read_text())
        assert not links, f"{md.name} links {links}: a download, not the changelog page"
    assert re.search(r"^changelog$", (DOCS / "index.md").read_text(), re.M), "changelog missing from the toctree"


def test_pages_without_subpages_have_no_section_sidebar():
    conf = runpy.run_path(str(DOCS / "conf.py"))
    sidebars = conf["html_sidebars"]
    for md in DOCS.glob("*.md"):
        has_subpages = "{toctree}" in md.read_text() and md.stem != "index"
        if not has_subpages and md.stem != "api":
            assert sidebars.get(md.stem) == [], md.name
    assert conf["html_theme_options"]["header_links_before_dropdown"] <= 4  # search and theme switcher fit at 1280 px
