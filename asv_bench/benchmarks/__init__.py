"""ember's asv benchmarks: one module per area, helpers in ``_lib``."""

# asv runs each benchmark in a fresh process without the caller's PYTHONPATH:
# put the source checkout (the in-place build) on sys.path before any module
# below imports ember.
from ._lib import _ensure_ember_path

_ensure_ember_path()
