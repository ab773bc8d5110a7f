"""default_collate / default_convert with PyTorch's rules."""
from __future__ import annotations

import collections.abc
import copy
import re

import ember

__all__ = ["default_collate", "default_convert"]

_np_str_obj_array_pattern = re.compile(r"[SaUO]")

_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def _np():
    import numpy
    return numpy


def _is_numpy(x):
    t = type(x)
    return t.__module__ == "numpy" and t.__name__ not in ("str_", "string_", "bytes_")


def default_convert(data):
    """NumPy arrays and scalars -> tensors, recursively (used when batch_size is None)."""
    elem_type = type(data)
    if isinstance(data, ember.Tensor):
        return data
    if _is_numpy(data):
        np = _np()
        if isinstance(data, np.ndarray):
            if _np_str_obj_array_pattern.search(data.dtype.str) is not None:
                return data
            return ember.as_tensor(data)
        if isinstance(data, np.generic):
            return ember.as_tensor(data)
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: default_convert(data[k]) for k in data})
                return clone
            return elem_type({k: default_convert(data[k]) for k in data})
        except TypeError:
            return {k: default_convert(data[k]) for k in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def default_collate(batch):
    """Stack a list of samples into a batch: tensors and NumPy arrays are stacked along a
    new first dim, Python floats become float64 tensors, ints int64 tensors, and
    dicts / tuples / lists are collated field by field."""
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, ember.Tensor):
        return ember.stack(list(batch), 0)
    if _is_numpy(elem):
        np = _np()
        if isinstance(elem, np.ndarray) or elem_type.__name__ == "memmap":
            if _np_str_obj_array_pattern.search(elem.dtype.str) is not None:
                raise TypeError(_ERR.format(elem.dtype))
            return ember.from_numpy(np.stack(batch, 0))
        if elem.shape == ():
            return ember.as_tensor(np.array(batch))
    if isinstance(elem, bool):
        return ember.tensor(batch, dtype=ember.bool)
    if isinstance(elem, float):
        return ember.tensor(batch, dtype=ember.float64)
    if isinstance(elem, int):
        return ember.tensor(batch, dtype=ember.int64)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: default_collate([d[key] for d in batch]) for key in elem})
                return clone
            return elem_type({key: default_collate([d[key] for d in batch]) for key in elem})
        except TypeError:
            return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(list(s)) for s in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, s in enumerate(transposed):
                    clone[i] = default_collate(list(s))
                return clone
            return elem_type([default_collate(list(s)) for s in transposed])
        except TypeError:
            return [default_collate(list(s)) for s in transposed]
    raise TypeError(_ERR.format(elem_type))
