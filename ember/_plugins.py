"""Autoloading of out-of-tree backends through the ``ember.backends`` entry-point group.

A backend distribution declares, in its metadata::

    [ember.backends]
    mydev = ember_mydev:_autoload

and ``import ember`` imports ``ember_mydev`` and calls ``_autoload()`` as
its very last step (typically registering ``ember.mydev`` with
``ember._register_device_module``).  ``EMBER_DEVICE_BACKEND_AUTOLOAD=0``
turns it off.

Discovery reads ``*.dist-info/entry_points.txt`` (and ``*.egg-info``) of the
directories on ``sys.path`` directly, one directory listing per path entry,
instead of importing :mod:`importlib.metadata` (which costs more than the
rest of ``import ember``).  The first distribution of a given name on
``sys.path`` wins, as for ``importlib.metadata``.
"""

from __future__ import annotations

import os
import sys

from ember._dll import _record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable

__all__ = ["EntryPoint", "discover", "loaded", "GROUP", "ENV_VAR"]

GROUP = "ember.backends"
ENV_VAR = "EMBER_DEVICE_BACKEND_AUTOLOAD"


class EntryPoint(_record("EntryPoint", ("name", "value", "distribution", "path"))):
    """One ``ember.backends`` entry point: ``name = value`` from ``distribution``.

    ``value`` is ``"module"`` or ``"module:attr.attr"``; ``path`` is the
    metadata directory it came from.
    """

    __slots__ = ()

    def load(self) -> Any:
        """Import the module and resolve the attribute path."""
        module, _, attr = self.value.partition(":")
        attr = attr.split("[", 1)[0].strip()  # drop "[extras]"
        module = module.strip()
        __import__(module)
        obj = sys.modules[module]
        for part in filter(None, attr.split(".")):
            obj = getattr(obj, part)
        return obj


_loaded: list = []
_state = "idle"   # "idle" -> "loading" -> "done"


def loaded() -> list:
    """The entry points autoloaded so far (a copy)."""
    return list(_loaded)


def _parse_entry_points(text: str, group: str) -> list:
    """``name = value`` pairs of section ``[group]`` of an entry_points.txt."""
    out = []
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line[0] == "[" and line[-1] == "]":
            section = line[1:-1].strip()
            continue
        if section == group and "=" in line:
            name, value = line.split("=", 1)
            out.append((name.strip(), value.strip()))
    return out


def _dist_name(meta_dir_name: str) -> str:
    stem = meta_dir_name.rsplit(".", 1)[0]
    return stem.split("-", 1)[0].lower().replace("-", "_").replace(".", "_")


def discover(group: str = GROUP, paths: Iterable[str] | None = None) -> list:
    """The entry points of ``group`` from distributions on ``paths`` (default ``sys.path``)."""
    found = []
    seen_dists = set()
    for entry in (sys.path if paths is None else paths):
        directory = entry or "."
        try:
            with os.scandir(directory) as it:
                metas = sorted(e.name for e in it
                               if e.name.endswith((".dist-info", ".egg-info")))
        except OSError:  # not a directory (zip, missing entry)
            continue
        for meta in metas:
            dist = _dist_name(meta)
            if dist in seen_dists:
                continue
            seen_dists.add(dist)
            path = os.path.join(directory, meta, "entry_points.txt")
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except OSError:
                continue
            if group not in text:
                continue
            for name, value in _parse_entry_points(text, group):
                found.append(EntryPoint(name, value, meta.rsplit(".", 1)[0],
                                        os.path.join(directory, meta)))
    return found


def _autoload(environ: Any = None, *, discover_fn: Callable[[], list] | None = None) -> None:
    """Load every ``ember.backends`` entry point once (the last step of ``import ember``).

    Re-entrant calls (a plugin that imports ember, or calls this again) are
    no-ops.  A failing plugin raises ``RuntimeError`` naming the extension
    and its entry point, chained to the original error.
    """
    global _state
    env = os.environ if environ is None else environ
    if _state != "idle":
        return
    if env.get(ENV_VAR, "1").strip().lower() in ("0", "false", "no", "off"):
        _state = "done"
        return
    _state = "loading"
    try:
        for ep in (discover_fn or discover)():
            try:
                hook = ep.load()
                if callable(hook):
                    hook()
            except Exception as err:
                _state = "failed"
                raise RuntimeError(
                    f"Failed to load the ember backend extension '{ep.name}' (entry point "
                    f"'{ep.name} = {ep.value}' in group '{GROUP}' of distribution "
                    f"'{ep.distribution}'): {type(err).__name__}: {err}. If you do not need "
                    f"this extension, disable backend autoloading with {ENV_VAR}=0, or "
                    f"uninstall the distribution.") from err
            _loaded.append(ep)
    finally:
        # A failed load is retried (and fails again, loudly) on the next import.
        _state = "idle" if _state == "failed" else "done"
