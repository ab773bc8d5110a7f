"""Device-test harness: tests marked ``cuda`` skip, with ember.cuda's reason,
where no usable device is present; the ``dev`` fixture (harness.Dev) moves
NumPy arrays to and from device memory and calls the kernels' C ABI."""

import pytest

import ember

from .harness import Dev


def pytest_runtest_setup(item):
    if item.get_closest_marker("cuda") and not ember.cuda.is_available():
        pytest.skip(f"CUDA unavailable: {ember.cuda.unavailable_reason()}")


@pytest.fixture
def dev():
    d = Dev()
    yield d
    d.close()
