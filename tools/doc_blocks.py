"""The Python code blocks of the docs (``docs/**/*.rst``, ``docs/**/*.md``, README.md).

A block is a complete example unless marked otherwise, and then it must pass
mypy (``make typecheck``) and run (tests/test_docs.py runs each in a fresh
process, in an empty directory).  Two explicit marks, as the block's class:

* ``fragment``: part of a file that cannot stand alone (a plugin's module, an
  asv benchmark); neither checked nor run.
* ``no-run``: a complete script that needs what a test cannot give it (several
  processes under an MPI launcher); type-checked, not run.

In reST: ``.. code-block:: python`` followed by ``:class: fragment``; in
Markdown: a fence opened with ```` ```python fragment ````.

Usage: ``python tools/doc_blocks.py list | mypy | extract DIR``.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = ("complete", "no-run", "fragment")
_RST = re.compile(r"^(\s*)\.\. code-block:: (python3?|py)\s*$")
_MD = re.compile(r"^(\s*)```(python3?|py)\b(.*)$")


@dataclass
class Block:
    path: str          # relative to the repository root
    line: int          # 1-based line of the block's first code line
    code: str
    kind: str

    @property
    def module(self) -> str:
        """A module name for the block's file (unique per block)."""
        stem = re.sub(r"\W", "_", os.path.splitext(self.path)[0])
        return f"doc_{stem}_l{self.line}"


def _rst_blocks(path: str, lines: list[str]) -> list[Block]:
    out = []
    i = 0
    while i < len(lines):
        m = _RST.match(lines[i])
        i += 1
        if not m:
            continue
        indent = len(m.group(1))
        kind = "complete"
        while i < len(lines) and lines[i].strip().startswith(":"):   # directive options
            opt = lines[i].strip()
            if opt.startswith(":class:"):
                kind = opt.split(":", 2)[2].strip()
            i += 1
        body: list[str] = []
        start = None
        while i < len(lines):
            ln = lines[i]
            if ln.strip() and len(ln) - len(ln.lstrip()) <= indent:
                break
            if ln.strip() and start is None:
                start = i + 1
            body.append(ln)
            i += 1
        code = _dedent(body)
        out.append(Block(path, start or i, code, _kind(kind, path, start or i)))
    return out


def _md_blocks(path: str, lines: list[str]) -> list[Block]:
    out = []
    i = 0
    while i < len(lines):
        m = _MD.match(lines[i])
        i += 1
        if not m:
            continue
        kind = m.group(3).strip() or "complete"
        start = i + 1
        body = []
        while i < len(lines) and not lines[i].strip().startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1
        out.append(Block(path, start, _dedent(body), _kind(kind, path, start)))
    return out


def _kind(kind: str, path: str, line: int) -> str:
    if kind not in KINDS:
        raise ValueError(f"{path}:{line}: unknown code-block class {kind!r}; use one of "
                         f"{KINDS[1:]} (or none: a complete example)")
    return kind


def _dedent(body: list[str]) -> str:
    while body and not body[-1].strip():
        body.pop()
    width = min((len(ln) - len(ln.lstrip()) for ln in body if ln.strip()), default=0)
    return "\n".join(ln[width:] for ln in body) + "\n"


def blocks(root: str = ROOT) -> list[Block]:
    """Every Python block of the docs pages and README.md, in file order."""
    paths = sorted(glob.glob(os.path.join(root, "docs", "**", "*.rst"), recursive=True) +
                   glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True))
    paths = [p for p in paths if os.sep + "_build" + os.sep not in p]
    paths.append(os.path.join(root, "README.md"))
    out: list[Block] = []
    for p in paths:
        if not os.path.isfile(p):
            continue
        with open(p, encoding="utf-8") as f:
            lines = f.read().splitlines()
        rel = os.path.relpath(p, root)
        out += _md_blocks(rel, lines) if p.endswith(".md") else _rst_blocks(rel, lines)
    return out


def extract(outdir: str, kinds: tuple[str, ...] = ("complete", "no-run")) -> list[str]:
    """Write the blocks of ``kinds`` as modules into ``outdir``; returns their paths."""
    os.makedirs(outdir, exist_ok=True)
    files = []
    for b in blocks():
        if b.kind in kinds:
            fn = os.path.join(outdir, b.module + ".py")
            with open(fn, "w", encoding="utf-8") as f:
                f.write(f"# {b.path}:{b.line}\n{b.code}")
            files.append(fn)
    return files


def run_mypy(extra: list[str] | None = None) -> int:
    """mypy (with the project's configuration) over the checked blocks."""
    with tempfile.TemporaryDirectory() as d:
        files = extract(d)
        cmd = [sys.executable, "-m", "mypy", "--config-file",
               os.path.join(ROOT, "pyproject.toml"), *(extra or []), *files]
        return subprocess.run(cmd, cwd=ROOT).returncode


def main(argv: list[str]) -> int:
    if argv[:1] == ["list"]:
        for b in blocks():
            print(f"{b.path}:{b.line}: {b.kind}")
        return 0
    if argv[:1] == ["mypy"]:
        return run_mypy(argv[1:])
    if argv[:1] == ["extract"] and len(argv) == 2:
        for fn in extract(argv[1]):
            print(fn)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
