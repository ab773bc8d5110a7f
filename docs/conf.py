"""Sphinx configuration for ember's documentation (``make docs``: warnings are errors).

The API reference is generated from docstrings with autodoc.  Two things keep
``-W`` builds robust while the library grows:

* A module that fails to import is not silently dropped: its API page is
  replaced by a note naming the module and the error, and the build prints
  the list.  ``EMBER_DOCS_STRICT=1`` makes any such failure an error.
* A docstring that is not valid reStructuredText is shown verbatim (as a
  literal block) instead of failing the build; the build prints which ones,
  so they can be fixed.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)           # the in-place build (`make build`)
sys.path.insert(0, os.path.join(HERE, "_ext"))
os.environ.setdefault("EMBER_DEVICE_BACKEND_AUTOLOAD", "0")  # docs of ember itself only

from ember._version import __version__ as release  # noqa: E402

project = "ember"
author = "the ember developers"
copyright = "the ember developers"
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "sphinx.ext.viewcode",
    "myst_parser",
    "ember_docs",                   # docs/_ext/ember_docs.py
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]

# -- HTML ---------------------------------------------------------------------
html_theme = "furo"
html_title = f"ember {release}"
html_static_path = []

# -- autodoc ------------------------------------------------------------------
autodoc_default_options = {
    "members": True,
    "undoc-members": False,
    "show-inheritance": True,
}
autodoc_member_order = "groupwise"
autodoc_typehints = "signature"
autodoc_inherit_docstrings = True
autosummary_generate = False
napoleon_numpy_docstring = True
napoleon_google_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True         # "Attributes" sections as fields, not duplicate entries
add_module_names = False

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
}
# No network at build time: intersphinx is off unless asked for.
if os.environ.get("EMBER_DOCS_INTERSPHINX") != "1":
    intersphinx_mapping = {}

myst_heading_anchors = 3

ember_docs_strict = os.environ.get("EMBER_DOCS_STRICT") == "1"
