#!/usr/bin/env python3
"""Turn asv results into a Markdown table of ember/PyTorch and ember/NumPy ratios.

Usage::

    python tools/bench_table.py [--results asv_bench/.asv/results] [--commit HASH]
                                [--machine NAME] [-o asv_bench/ratios.md]

Reads asv's results JSON (format version 2: ``result_columns`` and one row
per benchmark, the values flattened over the product of its parameters) and
``benchmarks.json`` (units, parameter names).  A benchmark is compared across
libraries when it has a ``library`` parameter, or when its name holds
``ember`` and sibling benchmarks hold ``torch``/``numpy`` in the same place
(``timeraw_import_ember`` beside ``timeraw_import_torch``).  A ratio below 1
means ember is faster (or smaller); skipped or failed rows are ``n/a``.

With no ``--commit`` the newest results file (by date) is used, together with
every other file of the same commit and machine.  Only the standard library is
needed.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import math
import os
import sys

LIBS = ("ember", "torch", "numpy")
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_RESULTS = os.path.join(HERE, os.pardir, "asv_bench", ".asv", "results")


# -- reading --------------------------------------------------------------------

def _results_files(results_dir: str, machine: str | None = None):
    """(machine, path, data) for every results file under ``results_dir``."""
    out = []
    if not os.path.isdir(results_dir):
        return out
    for m in sorted(os.listdir(results_dir)):
        mdir = os.path.join(results_dir, m)
        if not os.path.isdir(mdir) or (machine and m != machine):
            continue
        for f in sorted(os.listdir(mdir)):
            if not f.endswith(".json") or f == "machine.json":
                continue
            path = os.path.join(mdir, f)
            try:
                with open(path) as fh:
                    data = json.load(fh)
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and "results" in data:
                out.append((m, path, data))
    return out


def _unquote(p: str) -> str:
    try:
        v = ast.literal_eval(p)
    except (ValueError, SyntaxError):
        return p
    return v if isinstance(v, str) else p


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def load_results(results_dir: str, commit: str | None = None, machine: str | None = None):
    """``({benchmark: {param_tuple: value}}, {benchmark: param_names}, info)``.

    ``param_tuple`` holds the parameter values as display strings.
    """
    files = _results_files(results_dir, machine)
    if not files:
        raise SystemExit(f"bench_table: no asv results under {results_dir} (run `make bench`)")
    if commit:
        files = [f for f in files if f[2].get("commit_hash", "").startswith(commit)]
        if not files:
            raise SystemExit(f"bench_table: no results for commit {commit!r} in {results_dir}")
    newest = max(files, key=lambda f: f[2].get("date") or 0)
    chosen = [f for f in files if f[0] == newest[0]
              and f[2].get("commit_hash") == newest[2].get("commit_hash")]
    chosen.sort(key=lambda f: f[2].get("date") or 0)  # newer files override older ones

    meta = {}
    bj = os.path.join(results_dir, "benchmarks.json")
    if os.path.exists(bj):
        with open(bj) as fh:
            meta = {k: v for k, v in json.load(fh).items() if isinstance(v, dict)}

    values: dict = {}
    names: dict = {}
    for _, _, data in chosen:
        cols = data.get("result_columns") or ["result", "params"]
        for bench, row in data["results"].items():
            if not isinstance(row, list):
                continue
            rec = dict(zip(cols, row))
            result, params = rec.get("result"), rec.get("params") or []
            if result is None:
                continue
            if not isinstance(result, list):
                result = [result]
            combos = list(itertools.product(*[[_unquote(p) for p in ps] for ps in params]))
            if not combos:
                combos = [()]
            slot = values.setdefault(bench, {})
            for combo, v in zip(combos, result):
                slot[combo] = v if _is_number(v) else None
            names[bench] = list(meta.get(bench, {}).get("param_names") or
                                [f"p{i}" for i in range(len(params))])
    info = {"machine": newest[0], "commit": newest[2].get("commit_hash", "?"),
            "params": newest[2].get("params", {}), "meta": meta}
    return values, names, info


# -- shaping --------------------------------------------------------------------

def _unit(meta: dict, bench: str) -> str:
    m = meta.get(bench, {})
    if m.get("unit"):
        return m["unit"]
    short = bench.rsplit(".", 1)[-1]
    if short.startswith(("time", "timeraw")):
        return "seconds"
    if short.startswith(("peakmem", "mem")):
        return "bytes"
    return ""


def fmt(v, unit: str) -> str:
    """A value with a readable unit (``n/a`` for a missing one)."""
    if v is None:
        return "n/a"
    if unit == "seconds":
        for scale, suffix in ((1, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
            if abs(v) >= scale or suffix == "ns":
                return f"{v / scale:.3g} {suffix}"
    if unit == "bytes":
        for scale, suffix in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"), (1, "B")):
            if abs(v) >= scale or suffix == "B":
                return f"{v / scale:.3g} {suffix}"
    return f"{v:.4g}" + (f" {unit}" if unit and unit != "unit" else "")


def _ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def rows(values: dict, names: dict, meta: dict):
    """One dict per (benchmark, non-library parameters) with the three libraries' values."""
    out = []
    done = set()
    for bench in sorted(values):
        pn = names.get(bench, [])
        unit = _unit(meta, bench)
        if "library" in pn:
            li = pn.index("library")
            groups: dict = {}
            for combo, v in values[bench].items():
                if li >= len(combo):
                    continue
                key = combo[:li] + combo[li + 1:]
                groups.setdefault(key, {})[combo[li]] = v
            other = [n for n in pn if n != "library"]
            for key in sorted(groups, key=lambda k: [str(x) for x in k]):
                label = ", ".join(f"{n}={v}" for n, v in zip(other, key))
                out.append(dict(bench=bench, params=label, unit=unit,
                                **{lib: groups[key].get(lib) for lib in LIBS}))
            continue
        # name-paired: ..._ember vs ..._torch / ..._numpy
        short = bench.rsplit(".", 1)[-1]
        if "ember" not in short or bench in done:
            continue
        siblings = {lib: bench.replace("ember", lib) for lib in LIBS}
        if not any(s in values for lib, s in siblings.items() if lib != "ember"):
            continue
        for combo in sorted(values[bench], key=lambda k: [str(x) for x in k]):
            label = ", ".join(f"{n}={v}" for n, v in zip(pn, combo))
            out.append(dict(bench=bench.replace("ember", "{lib}"), params=label, unit=unit,
                            **{lib: values.get(s, {}).get(combo) for lib, s in siblings.items()}))
        done.update(siblings.values())
    for r in out:
        r["vs_torch"] = _ratio(r["ember"], r["torch"])
        r["vs_numpy"] = _ratio(r["ember"], r["numpy"])
    return out


def _geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def markdown(table: list, info: dict) -> str:
    """The Markdown page: a header, one table row per comparison, geometric means."""
    p = info.get("params", {})
    lines = [
        "# ember benchmark ratios",
        "",
        f"asv results for commit `{str(info.get('commit'))[:12]}` on machine "
        f"`{info.get('machine')}` ({p.get('cpu', '?')}, {p.get('num_cpu', '?')} CPUs, "
        f"{p.get('os', '?')}).",
        "Ratios are ember / other: below 1 means ember is faster (or uses less memory).",
        "Generated by `tools/bench_table.py` from `make bench`, which takes one sample per "
        "row: treat single rows as indicative, and rerun on a quiet machine before quoting.",
        "",
        "| benchmark | parameters | ember | torch | numpy | ember/torch | ember/numpy |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]

    def r3(x):
        return "n/a" if x is None else f"{x:.2f}"

    for r in table:
        lines.append(f"| `{r['bench']}` | {r['params'] or '-'} | {fmt(r['ember'], r['unit'])} | "
                     f"{fmt(r['torch'], r['unit'])} | {fmt(r['numpy'], r['unit'])} | "
                     f"{r3(r['vs_torch'])} | {r3(r['vs_numpy'])} |")
    timed = [r for r in table if r["unit"] == "seconds"]
    gt, gn = _geomean([r["vs_torch"] for r in timed]), _geomean([r["vs_numpy"] for r in timed])
    lines += ["", f"Geometric mean of the time ratios: ember/torch {r3(gt)}, "
                  f"ember/numpy {r3(gn)} ({len(timed)} timed rows).", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=DEFAULT_RESULTS, help="asv results_dir")
    ap.add_argument("--commit", help="commit hash (prefix); default: the newest results")
    ap.add_argument("--machine", help="asv machine name; default: that of the newest results")
    ap.add_argument("-o", "--output", help="also write the table to this file")
    args = ap.parse_args(argv)
    values, names, info = load_results(args.results, args.commit, args.machine)
    text = markdown(rows(values, names, info["meta"]), info)
    sys.stdout.write(text)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
