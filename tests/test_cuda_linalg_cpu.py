"""``ember.linalg`` on CUDA tensors without a GPU: every test of
tests/cuda/test_device_linalg.py runs here over the stand-in for libember_cuda.so
(tests/cuda/fake_device.py)."""

import pytest

from tests.cuda import test_device_linalg as _device_linalg
from tests.cuda.fake_device import FakeDevice


@pytest.fixture(autouse=True)
def _fake_device():
    with FakeDevice() as fd:
        yield fd


for _name in dir(_device_linalg):
    if _name.startswith("test_"):
        globals()[_name] = getattr(_device_linalg, _name)
