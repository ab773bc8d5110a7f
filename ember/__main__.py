"""``python -m ember``: report the environment ember runs in.

Version, how it was built (compiler, flags), the CPU features and the kernel
ISA picked at run time, the thread count, whether the CUDA library was found
(or why not) and which backend plugins were loaded.  Paste it into bug reports.
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Any


def _cpu_info(core: Any) -> dict:
    get = getattr(core, "_cpu_info", None)
    if callable(get):
        try:
            info = get()
            if isinstance(info, dict):
                return info
        except Exception as e:  # degrade: the report must always print
            return {"isa": f"unknown ({type(e).__name__}: {e})", "features": []}
    return {"isa": "unknown (ember._C.core._cpu_info is missing)", "features": []}


def report() -> str:
    """The environment report as a string."""
    import ember
    from ember import __config__, _dll, _plugins
    from ember._C import core

    lines = []
    add = lines.append
    add(f"ember version:      {ember.__version__}")
    add(f"ember location:     {os.path.dirname(ember.__file__)}")
    add(f"Python:             {sys.version.split()[0]} ({platform.python_implementation()})")
    add(f"platform:           {platform.platform()}")
    cfg = __config__.config()
    add(f"compiler:           {cfg['compiler']} ({cfg['compiler_version']})")
    add(f"cflags:             {cfg['cflags']}")
    add(f"openmp:             {cfg['openmp']}   debug build: {cfg['debug']}   "
        f"CUDA built: {cfg['cuda_built']}")
    info = _cpu_info(core)
    feats = info.get("features", [])
    if isinstance(feats, dict):
        feats = [k for k, v in feats.items() if v]
    add(f"CPU:                {ember.cpu.get_device_name()}")
    add(f"CPU features:       {' '.join(feats) if feats else '(none reported)'}")
    add(f"kernel ISA:         {info.get('isa')}")
    get_threads = getattr(ember, "get_num_threads", None)
    add(f"threads:            {get_threads() if callable(get_threads) else 'unknown'}")
    add(f"extension loading:  {_dll.load_flags()}")
    st = _dll.cuda_status()
    if st.available:
        add(f"CUDA:               available, {st.device_count} device(s): "
            f"{', '.join(st.device_names)}")
        add(f"  library:          {st.library}")
        add(f"  runtime / driver: {st.runtime} / {st.driver}")
    else:
        add(f"CUDA:               not available: {st.reason}")
        if st.runtime:
            add(f"  runtime found:    {st.runtime}")
    autoload = os.environ.get(_plugins.ENV_VAR, "1")
    eps = _plugins.loaded()
    if eps:
        add(f"backend plugins:    {len(eps)} loaded")
        for ep in eps:
            add(f"  {ep.name} = {ep.value}  ({ep.distribution})")
    else:
        add("backend plugins:    none loaded" + (f" (autoload disabled: {_plugins.ENV_VAR}="
                                                  f"{autoload})" if autoload == "0" else ""))
    return "\n".join(lines) + "\n"


def main() -> int:
    sys.stdout.write(report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
