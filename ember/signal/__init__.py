"""``ember.signal``: signal-processing helpers (PyTorch's ``torch.signal``); the window
functions are in :mod:`ember.signal.windows`."""
from ember.signal import windows

__all__ = ["windows"]
