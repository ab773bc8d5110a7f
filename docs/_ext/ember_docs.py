"""Sphinx helpers for ember's docs.

``.. ember-api:: MODULE``
    The API reference of one module: an autosummary table of its public names
    (``__all__``) followed by ``automodule`` with members.  A module that does
    not import becomes a visible note naming the error (and a build error with
    ``EMBER_DOCS_STRICT=1``); the build prints the list at the end.

``.. ember-bench-ratios:: PATH``
    The Markdown table written by ``tools/bench_table.py`` (``make bench``)
    rendered as a table; a note saying how to make it when the file is absent.

Docstrings that are not valid reStructuredText (after napoleon) are shown
verbatim instead of failing a ``-W`` build; the build prints which ones.
"""

from __future__ import annotations

import importlib
import io
import os
import re
import sys
import traceback

from docutils import nodes
from docutils.parsers.rst import Directive
from docutils.statemachine import StringList
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.nodes import nested_parse_with_titles

logger = logging.getLogger(__name__)

_import_failures: dict[str, str] = {}
_verbatim_docstrings: list[str] = []


def _try_import(name: str):
    try:
        return importlib.import_module(name), None
    except Exception as e:  # any failure: the page says why
        last = traceback.format_exception_only(type(e), e)[-1].strip()
        return None, last


def _public_names(mod) -> list[str]:
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in vars(mod) if not n.startswith("_")
                 and getattr(getattr(mod, n), "__module__", "").startswith(mod.__name__)]
    return [n for n in dict.fromkeys(names) if hasattr(mod, n)]


class EmberApi(Directive):
    required_arguments = 1
    has_content = False

    def run(self):
        env = self.state.document.settings.env
        name = self.arguments[0]
        mod, err = _try_import(name)
        if mod is None:
            _import_failures[name] = err
            if env.config.ember_docs_strict:
                raise ExtensionError(f"ember-api: cannot import {name}: {err}")
            note = nodes.note()
            note += nodes.paragraph(text=f"{name} could not be imported when these docs were "
                                         f"built, so its reference is missing here: {err}")
            return [note]
        # submodules have their own pages
        names = [n for n in _public_names(mod) if not isinstance(getattr(mod, n), type(os))
                 and not (n.startswith("__") and n.endswith("__"))]
        lines = [f".. automodule:: {name}", "   :no-members:", ""]
        if names:
            lines += [".. rubric:: Summary", "", ".. autosummary::", "   :nosignatures:", ""]
            lines += [f"   {n}" for n in names]
            lines += ["", ".. rubric:: Reference", ""]
            for n in names:
                obj = getattr(mod, n)
                kind = _directive_for(obj)
                lines += [f".. {kind}:: {name}.{n}"]
                if kind == "autoclass":
                    lines += ["   :members:", "   :show-inheritance:"]
                if _documented_elsewhere(obj, name, env):
                    lines += ["   :no-index:"]
                lines += [""]
        content = StringList(lines, source=f"<ember-api {name}>")
        node = nodes.container()
        nested_parse_with_titles(self.state, content, node)
        return node.children


def _api_modules(env) -> list[str]:
    """The modules that have an ``ember-api`` page (scanned once per build)."""
    mods = getattr(env, "_ember_api_modules", None)
    if mods is None:
        mods = []
        for root, _, files in os.walk(env.srcdir):
            for f in files:
                if f.endswith(".rst"):
                    with open(os.path.join(root, f), encoding="utf-8") as fh:
                        mods += re.findall(r"^\.\. ember-api::\s*(\S+)", fh.read(), re.M)
        env._ember_api_modules = mods
    return mods


def _documented_elsewhere(obj, page_module: str, env) -> bool:
    """Whether ``obj`` (re-exported by ``page_module``) has its own, more specific API page.

    ``ember.no_grad`` is ``ember.autograd.no_grad``: it is indexed on the
    ``ember.autograd`` page and listed without an index entry on ``ember``'s,
    so the two descriptions do not collide.
    """
    home = getattr(obj, "__module__", None) or ""
    for m in _api_modules(env):
        if m != page_module and m.startswith(page_module + ".") and \
                (home == m or home.startswith(m + ".")):
            return True
    return False


def _directive_for(obj) -> str:
    if isinstance(obj, type):
        if issubclass(obj, BaseException):
            return "autoexception"
        return "autoclass"
    if callable(obj):
        return "autofunction"
    if type(obj).__name__ == "module":
        return "automodule"
    return "autodata"


_ROLE = re.compile(r":[\w:.+-]+:`([^`]*)`")


def _rst_problems(text: str) -> str:
    """docutils' warnings (level >= 2) for ``text``, with Sphinx roles neutralised."""
    from docutils.core import publish_doctree

    stream = io.StringIO()
    probe = _ROLE.sub(lambda m: "``" + m.group(1).replace("`", "") + "``", text)
    try:
        publish_doctree(probe, settings_overrides={
            "report_level": 2, "halt_level": 5, "warning_stream": stream,
            "file_insertion_enabled": False, "raw_enabled": False,
        })
    except Exception:  # a construct that needs a Sphinx environment: Sphinx judges it
        return ""
    # directives and roles that exist only inside Sphinx are not problems
    sphinx_only = ("Unknown directive type", "Unknown interpreted text role",
                   "No directive entry for", "No role entry for")
    out = [ln for ln in stream.getvalue().splitlines()
           if ln and not any(s in ln for s in sphinx_only)]
    real = [ln for ln in out if re.search(r"\((WARNING|ERROR|SEVERE)/", ln)]
    return "\n".join(real)


_SIGNATURE = re.compile(r"^[A-Za-z_][\w.]*\(.*\)(\s*->\s*\S.*)?$")


def _guard_docstring(app, what, name, obj, options, lines):
    if not lines:
        return
    # A Cython-embedded signature autodoc did not strip (an alias: ember.multiply
    # is mul) would read as reST (`*args` opens emphasis): show it as code.
    if _SIGNATURE.match(lines[0].strip()) and "``" not in lines[0]:
        lines[0] = "``" + lines[0].strip() + "``"
    problems = _rst_problems("\n".join(lines))
    if not problems:
        return
    _verbatim_docstrings.append(f"{name}: {problems.splitlines()[0]}")
    text = list(lines)
    lines[:] = ["::", ""] + ["    " + ln for ln in text] + [""]


class BenchRatios(Directive):
    required_arguments = 1
    has_content = False

    def run(self):
        env = self.state.document.settings.env
        rel = self.arguments[0]
        path = os.path.normpath(os.path.join(os.path.dirname(env.doc2path(env.docname)), rel))
        if not os.path.exists(path):
            para = nodes.paragraph(text="No benchmark results in this checkout yet: run "
                                        "`make bench` to write asv_bench/ratios.md.")
            return [para]
        env.note_dependency(path)
        with open(path, encoding="utf-8") as f:
            md = f.read().splitlines()
        rows = [ln for ln in md if ln.startswith("|")]
        prose = [ln for ln in md if ln.strip() and not ln.startswith(("|", "#"))]
        out = []
        for p in prose:
            out += [p, ""]
        cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
        cells = [c for c in cells if not all(set(x) <= set("-:") for x in c)]
        if cells:
            out += [".. list-table::", "   :header-rows: 1", ""]
            for row in cells:
                first = True
                for c in row:
                    out.append(("   * - " if first else "     - ") + (c or "-"))
                    first = False
            out.append("")
        node = nodes.container()
        self.state.nested_parse(StringList(out, source=path), self.content_offset, node)
        return node.children


def _report(app, exc):
    # stderr, not the logger: visible under `sphinx -q`, and not a warning that
    # `-W` would turn into a failed build
    if exc is not None:
        return
    out = []
    if _import_failures:
        out.append("ember docs: API pages left out (module failed to import; "
                   "EMBER_DOCS_STRICT=1 makes this an error):")
        out += [f"  {k}: {v}" for k, v in sorted(_import_failures.items())]
    if _verbatim_docstrings:
        out.append("ember docs: docstrings shown verbatim (not valid reST, please fix):")
        out += [f"  {d}" for d in sorted(set(_verbatim_docstrings))]
    if out:
        sys.stderr.write("\n".join(out) + "\n")


def setup(app):
    app.add_config_value("ember_docs_strict", False, "env")
    app.add_directive("ember-api", EmberApi)
    app.add_directive("ember-bench-ratios", BenchRatios)
    app.connect("autodoc-process-docstring", _guard_docstring, priority=900)
    app.connect("build-finished", _report)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
