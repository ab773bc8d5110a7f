import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


@pytest.fixture
def torch():
    """PyTorch as a test oracle; the test skips cleanly when it is not installed."""
    return pytest.importorskip("torch")
