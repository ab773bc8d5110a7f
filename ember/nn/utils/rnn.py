"""Variable-length sequences for the recurrent layers (PyTorch's ``torch.nn.utils.rnn``).

A :class:`PackedSequence` stores a batch of sequences time step by time step, longest
first, without padding: ``data`` holds the ``batch_sizes[t]`` still-running sequences of
each step. ``RNN``, ``LSTM`` and ``GRU`` accept it and return one."""
from __future__ import annotations

from typing import NamedTuple

import ember
from ember._check import _check, _check_value

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]


class _PackedSequenceBase(NamedTuple):
    data: ember.Tensor
    batch_sizes: ember.Tensor
    sorted_indices: ember.Tensor | None
    unsorted_indices: ember.Tensor | None


class PackedSequence(_PackedSequenceBase):
    """Packed time steps of a batch of variable-length sequences.

    Attributes
    ----------
    data : Tensor
        ``(sum(lengths), *)``: step 0 of every sequence, then step 1 of those still
        running, and so on.
    batch_sizes : Tensor
        int64, the number of sequences running at each step.
    sorted_indices, unsorted_indices : Tensor or None
        The permutation that sorted the batch by decreasing length, and its inverse.
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:     # PackedSequence(*other) with a 4-tuple
            data, batch_sizes, sorted_indices, unsorted_indices = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """The same packing with ``data`` converted (``batch_sizes`` stays int64)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=ember.float64)

    def float(self):
        return self.to(dtype=ember.float32)

    def half(self):
        return self.to(dtype=ember.float16)

    @property
    def is_cuda(self) -> bool:
        return self.data.device.type == "cuda"

    def is_pinned(self) -> bool:
        return self.data.is_pinned()


def invert_permutation(permutation: ember.Tensor | None) -> ember.Tensor | None:
    """The inverse of a permutation of ``range(n)``."""
    if permutation is None:
        return None
    out = ember.empty_like(permutation)
    out.scatter_(0, permutation, ember.arange(permutation.numel(), dtype=permutation.dtype))
    return out


def _lengths_list(lengths):
    if isinstance(lengths, ember.Tensor):
        return [int(v) for v in lengths.reshape(-1).tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input: ember.Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded ``(T, B, *)`` (or ``(B, T, *)``) batch of sequences of ``lengths``.

    With ``enforce_sorted`` the lengths must decrease; otherwise the batch is sorted
    (stably) and the permutation is kept in the result."""
    lens = _lengths_list(lengths)
    bdim = 0 if batch_first else 1
    _check_value(len(lens) == input.shape[bdim],
                 lambda: f"Expected `len(lengths)` to be equal to batch_size, but got "
                         f"{len(lens)} (batch_size={input.shape[bdim]})")
    if enforce_sorted:
        _check(all(a >= b for a, b in zip(lens, lens[1:])),
               "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
               "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
               "pack_sequence to sidestep this requirement if you do not need ONNX "
               "exportability.")
        sorted_indices = None
        order = list(range(len(lens)))
    else:
        order = sorted(range(len(lens)), key=lambda i: -lens[i])
        sorted_indices = ember.tensor(order, dtype=ember.int64)
        input = input.index_select(bdim, sorted_indices)
    lens = [lens[i] for i in order]
    _check(not lens or lens[-1] > 0, "Length of all samples has to be greater than 0, but "
                                     "found an element in 'lengths' that is <= 0")
    if batch_first:
        input = input.transpose(0, 1)
    _check(not lens or lens[0] <= input.shape[0],
           lambda: f"Expected the longest length {lens[0]} to be at most the padded length "
                   f"{input.shape[0]}")
    steps = lens[0] if lens else 0
    sizes = [sum(1 for v in lens if v > t) for t in range(steps)]
    data = ember.cat([input[t, :sizes[t]] for t in range(steps)], 0)
    return PackedSequence(data, ember.tensor(sizes, dtype=ember.int64), sorted_indices,
                          invert_permutation(sorted_indices))


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):
    """Undo :func:`pack_padded_sequence`: the padded batch (in the original order) and an
    int64 tensor of the lengths."""
    sizes = _lengths_list(sequence.batch_sizes)
    steps = len(sizes)
    b = sizes[0] if sizes else 0
    if total_length is not None:
        _check_value(total_length >= steps,
                     lambda: f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
    else:
        total_length = steps
    data = sequence.data
    rows, off = [], 0
    feat = tuple(data.shape[1:])
    for n in sizes:
        piece = data[off:off + n]
        if n < b:
            fill = ember.full((b - n, *feat), padding_value, dtype=data.dtype)
            piece = ember.cat([piece, fill], 0)
        rows.append(piece)
        off += n
    for _ in range(total_length - steps):
        rows.append(ember.full((b, *feat), padding_value, dtype=data.dtype))
    padded = ember.stack(rows, 0) if rows else ember.empty(0, b, *feat, dtype=data.dtype)
    lengths = [sum(1 for n in sizes if n > i) for i in range(b)]
    lengths = ember.tensor(lengths, dtype=ember.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths.index_select(0, sequence.unsorted_indices)
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, lengths


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> ember.Tensor:
    """Stack tensors of shape ``(L_i, *)`` into ``(max L, B, *)`` (or ``(B, max L, *)``),
    padding each at its ``padding_side`` with ``padding_value``."""
    _check_value(padding_side in ("left", "right"),
                 lambda: f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    if isinstance(sequences, ember.Tensor):
        sequences = list(sequences.unbind(0))
    _check(len(sequences) > 0, "received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    out = []
    for s in sequences:
        extra = longest - s.shape[0]
        if extra:
            fill = ember.full((extra, *s.shape[1:]), padding_value, dtype=s.dtype)
            s = ember.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        out.append(s)
    return ember.stack(out, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: ember.Tensor, lengths, batch_first: bool = False):
    """Split a padded batch back into its sequences of ``lengths``."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, :n] for i, n in enumerate(_lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors of shape ``(L_i, *)``."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence):
    """The list of sequences a :class:`PackedSequence` holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
