"""Sphinx configuration of the zarrdask documentation.

Build with ``bash ci/build_docs.sh`` (``python -m sphinx -W --keep-going -b html docs
docs/_build/html``); needs ``pip install -e ".[docs]"``. The Markdown pages are read
by myst-parser, the API reference (``api.md``) is generated from numpydoc
docstrings with autosummary, the command line page (``cli.md``) by sphinx-click.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "src")))

import zarrdask

project = "zarrdask"
author = "the zarrdask developers"
copyright = "the zarrdask developers"
release = version = zarrdask.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx_click",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]
smartquotes = False  # keep "--json" and quotes in command help as typed

# -- Markdown ---------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3  # [text](page.md#a-heading) links resolve

# -- API reference ----------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # numpydoc sections carry the types
numpydoc_show_class_members = False  # autodoc documents the members
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False



# -- HTML -------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "zarrdask"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # the page titles are long: three in the header and the rest under "More" keep
    # search and the theme switcher on the header's one row at 1280 px
    "header_links_before_dropdown": 3,
    "navbar_align": "left",
}
# the left sidebar ("Section Navigation") only where a page has pages under it: the
# API reference; elsewhere it would be a heading with nothing under it
html_sidebars = {os.path.splitext(name)[0]: [] for name in os.listdir(os.path.dirname(os.path.abspath(__file__)))
                 if name.endswith(".md") and name != "api.md"}
