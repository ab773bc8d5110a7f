"""ember's asv benchmarks: one module per area, helpers in ``_lib``."""
