"""The machinery behind ``ember.serialization`` (kept out of ``import ember``'s path).

- ``_io``: raw byte access to storages, the 64-byte-aligned zip writer, the
  checked zip reader, atomic saves and memory maps.
- ``_torch``: PyTorch's ``torch.save`` zip format, written (``ember.save``'s default)
  and read.
- ``_ember``: ember's own checkpoint format (JSON structure + raw storages).
- ``_unpickle``: the restricted pickle interpreter ``weights_only=True`` loads use.
- ``_safetensors``: the safetensors format.

Only the error type lives here, so ``ember.serialization`` can re-export it
without importing anything heavy."""


class CheckpointError(RuntimeError):
    """A file that ember cannot read as a checkpoint: truncated, corrupted, foreign
    or written by a newer ember.  The message names the file and the problem."""
