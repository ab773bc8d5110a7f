"""``ember.utils.tensorboard``: log training to TensorBoard with :class:`SummaryWriter`.

Event files are written by the ``tensorboard`` package (an optional
dependency: ``pip install tensorboard`` or ``pip install ember[tensorboard]``),
so TensorBoard reads them as it reads PyTorch's.
"""

try:
    import tensorboard  # noqa: F401
except ModuleNotFoundError as e:
    raise ImportError("ember.utils.tensorboard needs the 'tensorboard' package, which is not "
                      "installed: pip install tensorboard (or pip install ember[tensorboard])"
                      ) from e

from ember.utils.tensorboard.writer import SummaryWriter

__all__ = ["SummaryWriter"]
