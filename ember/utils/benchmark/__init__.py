"""ember.utils.benchmark: ``Timer`` (``timeit``, ``blocked_autorange``,
``adaptive_autorange``), ``Measurement`` statistics and ``Compare`` tables, as in
``torch.utils.benchmark``."""
from ember.utils.benchmark._common import (
    Measurement,
    TaskSpec,
    select_unit,
    trim_sigfig,
    unit_to_english,
)
from ember.utils.benchmark._compare import Colorize, Compare
from ember.utils.benchmark._timer import Timer, timer

__all__ = ["Timer", "timer", "Measurement", "TaskSpec", "Compare", "Colorize", "select_unit",
           "trim_sigfig", "unit_to_english"]
