"""Anomaly detection: record where each graph node was created, and fail a backward
that produces NaN naming the forward op and printing its creation stack."""
from __future__ import annotations

import warnings

from ember.autograd import _engine

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "set_anomaly_enabled"]


def is_anomaly_enabled():
    return _engine._anomaly[0]


def is_anomaly_check_nan_enabled():
    return _engine._anomaly[1]


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off for the process (``torch.set_anomaly_enabled``)."""
    _set(enabled, check_nan)


def _set(mode, check_nan):
    _engine._anomaly[0] = bool(mode)
    _engine._anomaly[1] = bool(check_nan)


class detect_anomaly:
    """Context manager (and decorator) that enables anomaly detection inside."""

    def __init__(self, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        _set(True, self.check_nan)

    def __exit__(self, *exc):
        _set(self.prev, self.prev_check_nan)
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with detect_anomaly(self.check_nan):
                return fn(*a, **k)
        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off; as a context manager the previous state is
    restored at exit."""

    def __init__(self, mode, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        _set(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _set(self.prev, self.prev_check_nan)
        return False
