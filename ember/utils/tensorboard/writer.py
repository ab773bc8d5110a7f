"""TensorBoard's ``SummaryWriter`` for ember tensors (PyTorch's API).

The protocol buffers and the event-file writer are the ``tensorboard``
package's own; this module turns ember tensors, NumPy arrays and Python
numbers into summaries.  Values leave ember through ``.numpy()`` (logging is
interop, not computation).
"""

from __future__ import annotations

import os
import socket
import struct
import time
import zlib
from datetime import datetime
from typing import Any, Sequence

import numpy as np
from tensorboard.compat.proto.event_pb2 import Event, SessionLog, TaggedRunMetadata
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2
from tensorboard.plugins.hparams import metadata as hparams_metadata
from tensorboard.plugins.text import metadata as text_metadata
from tensorboard.summary.writer.event_file_writer import EventFileWriter

__all__ = ["SummaryWriter"]


def _numpy(value: Any, what: str) -> np.ndarray:
    """An ember tensor, NumPy array, number or nested list as a NumPy array."""
    from ember._C.core import TensorBase

    if isinstance(value, TensorBase):
        t = value.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if not t.dtype.is_floating_point or t.dtype.itemsize >= 4:
            return t.numpy()
        return t.float().numpy()  # float16/bfloat16: NumPy has no bfloat16
    try:
        return np.asarray(value)
    except Exception as e:
        raise TypeError(f"SummaryWriter.{what}(): expected a tensor, an array or a number, got "
                        f"{type(value).__name__}") from e


def _scalar(value: Any, what: str) -> float:
    arr = _numpy(value, what)
    if arr.size != 1:
        raise ValueError(f"SummaryWriter.{what}(): scalar_value must have one element, got shape "
                         f"{tuple(arr.shape)}")
    return float(arr.reshape(()))


# -- histograms -------------------------------------------------------------------

def _tensorflow_bins() -> list[float]:
    """TensorFlow's default bucket limits: +-1e-12 * 1.1**k up to 1e20, and 0."""
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-x for x in reversed(pos)] + [0.0] + pos


def _histogram(values: np.ndarray, bins: Any, max_bins: int | None) -> HistogramProto:
    values = values.astype(np.float64).reshape(-1)
    if values.size == 0:
        raise ValueError("SummaryWriter.add_histogram(): the input has no values")
    if not np.isfinite(values).all():
        raise ValueError("SummaryWriter.add_histogram(): the input has non-finite values")
    if isinstance(bins, str) and bins == "tensorflow":
        bins = _tensorflow_bins()
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        # merge neighbouring buckets so that at most max_bins remain
        group = -(-len(counts) // max_bins)
        pad = (-len(counts)) % group
        counts = np.pad(counts, (0, pad)).reshape(-1, group).sum(axis=1)
        limits = np.concatenate([limits[:-1][::group], limits[-1:]])
    # drop the empty buckets at both ends (TensorBoard draws from the first to the last)
    nonzero = np.flatnonzero(counts)
    first, last = nonzero[0], nonzero[-1] + 1
    counts = counts[first:last]
    upper = limits[first + 1:last + 1]
    return HistogramProto(min=float(values.min()), max=float(values.max()), num=values.size,
                          sum=float(values.sum()), sum_squares=float(values.dot(values)),
                          bucket_limit=upper.tolist(), bucket=counts.astype(np.float64).tolist())


# -- images -----------------------------------------------------------------------

def _to_hwc(img: np.ndarray, dataformats: str, what: str) -> np.ndarray:
    fmt = dataformats.upper()
    if sorted(fmt) not in (sorted("CHW"), sorted("HW"), sorted("HWC")) or len(set(fmt)) != len(fmt):
        raise ValueError(f"SummaryWriter.{what}(): dataformats must be a permutation of 'CHW', "
                         f"'HWC' or 'HW', got {dataformats!r}")
    if img.ndim != len(fmt):
        raise ValueError(f"SummaryWriter.{what}(): dataformats {dataformats!r} needs a "
                         f"{len(fmt)}-D image, got shape {tuple(img.shape)}")
    if "C" not in fmt:
        return img.transpose([fmt.index("H"), fmt.index("W")])[:, :, None]
    return img.transpose([fmt.index("H"), fmt.index("W"), fmt.index("C")])


def _grid(batch: np.ndarray, ncols: int = 8) -> np.ndarray:
    """N images (NHWC) tiled row by row, ``ncols`` per row, as one HWC image."""
    n, h, w, c = batch.shape
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    canvas = np.zeros((h * nrows, w * ncols, c), dtype=batch.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[y * h:(y + 1) * h, x * w:(x + 1) * w] = batch[i]
    return canvas


def _png(hwc: np.ndarray) -> bytes:
    """Encode an 8-bit HWC image (1, 3 or 4 channels) as PNG (zlib only, no imaging library)."""
    h, w, c = hwc.shape
    color_type = {1: 0, 3: 2, 4: 6}[c]
    raw = b"".join(b"\x00" + hwc[y].tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color_type,
                                                                0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def _image_summary(tag: str, hwc: np.ndarray, what: str) -> Summary:
    c = hwc.shape[2]
    if c not in (1, 3, 4):
        raise ValueError(f"SummaryWriter.{what}(): an image needs 1, 3 or 4 channels, got {c}")
    if hwc.dtype != np.uint8:
        # float images are in [0, 1] (as PyTorch): scale, round and clip to 8 bits
        hwc = np.clip(hwc.astype(np.float64) * 255.0 + 0.5, 0, 255).astype(np.uint8)
    image = Summary.Image(height=hwc.shape[0], width=hwc.shape[1], colorspace=c,
                          encoded_image_string=_png(np.ascontiguousarray(hwc)))
    return Summary(value=[Summary.Value(tag=tag, image=image)])


# -- hyperparameters (tensorboard's own helpers for these need TensorFlow) -----------

def _hparams_summary(tag: str, data: plugin_data_pb2.HParamsPluginData) -> Summary:
    meta = hparams_metadata.create_summary_metadata(data)
    return Summary(value=[Summary.Value(tag=tag, metadata=meta,
                                        tensor=hparams_metadata.NULL_TENSOR)])


def _hparams_summaries(hparams: dict[str, Any], infos: list, metrics: list) -> list[Summary]:
    now = time.time()
    experiment = api_pb2.Experiment(time_created_secs=now, hparam_infos=infos,
                                    metric_infos=metrics)
    start = plugin_data_pb2.SessionStartInfo(start_time_secs=now)
    for k, v in hparams.items():
        if isinstance(v, bool):
            start.hparams[k].bool_value = v
        elif isinstance(v, str):
            start.hparams[k].string_value = v
        else:
            start.hparams[k].number_value = v
    end = plugin_data_pb2.SessionEndInfo(status=api_pb2.STATUS_SUCCESS, end_time_secs=now)
    return [
        _hparams_summary(hparams_metadata.EXPERIMENT_TAG,
                         plugin_data_pb2.HParamsPluginData(experiment=experiment)),
        _hparams_summary(hparams_metadata.SESSION_START_INFO_TAG,
                         plugin_data_pb2.HParamsPluginData(session_start_info=start)),
        _hparams_summary(hparams_metadata.SESSION_END_INFO_TAG,
                         plugin_data_pb2.HParamsPluginData(session_end_info=end)),
    ]


# -- the writer -------------------------------------------------------------------

class SummaryWriter:
    """Write scalars, histograms, images, text and hyperparameters for TensorBoard.

    Parameters
    ----------
    log_dir : str, optional
        Where event files go; default ``runs/<date>_<host><comment>``.
    comment : str
        Appended to the default ``log_dir`` (ignored when ``log_dir`` is given).
    purge_step : int, optional
        Events of a crashed earlier run at or after this step are hidden by
        TensorBoard (a restart marker is written).
    max_queue : int
        Events buffered before a write to disk.
    flush_secs : int
        Seconds between automatic flushes.
    filename_suffix : str
        Appended to the event file's name.

    Examples
    --------
    >>> from ember.utils.tensorboard import SummaryWriter  # doctest: +SKIP
    >>> with SummaryWriter("runs/exp1") as w:               # doctest: +SKIP
    ...     for step in range(100):
    ...         w.add_scalar("loss", 1.0 / (step + 1), step)
    """

    def __init__(self, log_dir: str | None = None, comment: str = "",
                 purge_step: int | None = None, max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = "") -> None:
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self._writer: EventFileWriter | None = None
        self._sub_writers: dict[str, EventFileWriter] = {}
        self._file_writer()

    def _file_writer(self) -> EventFileWriter:
        if self._writer is None:
            self._writer = EventFileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                           self.filename_suffix)
            if self.purge_step is not None:
                self._writer.add_event(Event(step=self.purge_step,
                                             session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self._writer

    def get_logdir(self) -> str:
        """The directory the event files are written to."""
        return self.log_dir

    def _add(self, summary: Summary, global_step: int | None, walltime: float | None,
             writer: EventFileWriter | None = None) -> None:
        event = Event(summary=summary, wall_time=time.time() if walltime is None else walltime)
        if global_step is not None:
            event.step = int(global_step)
        (writer or self._file_writer()).add_event(event)

    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None,
                   walltime: float | None = None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """Log one number (a Python number or a one-element tensor) under ``tag``.

        ``new_style=True`` writes it as a tensor summary (faster to load in
        TensorBoard); ``double_precision`` keeps it as float64 there.
        """
        value = _scalar(scalar_value, "add_scalar")
        if new_style:
            tensor = (TensorProto(dtype="DT_DOUBLE", double_val=[value]) if double_precision
                      else TensorProto(dtype="DT_FLOAT", float_val=[value]))
            meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
            val = Summary.Value(tag=tag, tensor=tensor, metadata=meta)
        else:
            val = Summary.Value(tag=tag, simple_value=value)
        self._add(Summary(value=[val]), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict[str, Any],
                    global_step: int | None = None, walltime: float | None = None) -> None:
        """Log several numbers on one chart: each key is a run ``<log_dir>/<main_tag>_<key>``."""
        walltime = time.time() if walltime is None else walltime
        for tag, value in tag_scalar_dict.items():
            sub_dir = os.path.join(self.log_dir, main_tag.replace("/", "_") + "_" + tag)
            writer = self._sub_writers.get(sub_dir)
            if writer is None:
                writer = EventFileWriter(sub_dir, self.max_queue, self.flush_secs,
                                         self.filename_suffix)
                self._sub_writers[sub_dir] = writer
            summary = Summary(value=[Summary.Value(tag=main_tag,
                                                   simple_value=_scalar(value, "add_scalars"))])
            self._add(summary, global_step, walltime, writer)

    def add_histogram(self, tag: str, values: Any, global_step: int | None = None,
                      bins: Any = "tensorflow", walltime: float | None = None,
                      max_bins: int | None = None) -> None:
        """Log the distribution of ``values``.

        ``bins`` is ``"tensorflow"`` (TensorFlow's exponential buckets), a
        NumPy bin rule (``"auto"``, ``"fd"``, ...), a count or the edges.
        """
        proto = _histogram(_numpy(values, "add_histogram"), bins, max_bins)
        self._add(Summary(value=[Summary.Value(tag=tag, histo=proto)]), global_step, walltime)

    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> None:
        """Log one image: float in [0, 1] or uint8, laid out as ``dataformats``."""
        hwc = _to_hwc(_numpy(img_tensor, "add_image"), dataformats, "add_image")
        self._add(_image_summary(tag, hwc, "add_image"), global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: int | None = None,
                   walltime: float | None = None, dataformats: str = "NCHW") -> None:
        """Log a batch of images as one grid (8 per row); ``dataformats`` includes ``N``."""
        fmt = dataformats.upper()
        arr = _numpy(img_tensor, "add_images")
        if "N" not in fmt or arr.ndim != len(fmt):
            raise ValueError(f"SummaryWriter.add_images(): dataformats {dataformats!r} must "
                             f"name N and match the input's {arr.ndim} dimensions")
        n = fmt.index("N")
        rest = fmt.replace("N", "")
        batch = np.stack([_to_hwc(np.take(arr, i, axis=n), rest, "add_images")
                          for i in range(arr.shape[n])])
        if batch.shape[0] == 0:
            raise ValueError("SummaryWriter.add_images(): the batch is empty")
        self._add(_image_summary(tag, _grid(batch), "add_images"), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Log a (Markdown) string, shown in TensorBoard's Text tab."""
        if not isinstance(text_string, str):
            raise TypeError(f"SummaryWriter.add_text(): text_string must be a str, got "
                            f"{type(text_string).__name__}")
        meta = text_metadata.create_summary_metadata(display_name=None, description=None)
        tensor = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf-8")],
                             tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
        val = Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=tensor)
        self._add(Summary(value=[val]), global_step, walltime)

    def add_hparams(self, hparam_dict: dict[str, Any], metric_dict: dict[str, Any],
                    hparam_domain_discrete: dict[str, Sequence[Any]] | None = None,
                    run_name: str | None = None, global_step: int | None = None) -> None:
        """Log one training session's hyperparameters and final metrics (HParams tab).

        They go to the run ``<log_dir>/<run_name>`` (default: the current
        time), as in PyTorch.  Values are bool, int, float, str or ``None``
        (skipped); an ember tensor is taken as its single number.
        """
        if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
            raise TypeError("SummaryWriter.add_hparams(): hparam_dict and metric_dict must be "
                            "dicts")
        domains = hparam_domain_discrete or {}
        hparams: dict[str, Any] = {}
        infos = []
        for k, v in hparam_dict.items():
            if v is None:
                continue
            if not isinstance(v, (bool, int, float, str)):
                v = _scalar(v, "add_hparams")
            kind = ("DATA_TYPE_BOOL" if isinstance(v, bool) else
                    "DATA_TYPE_STRING" if isinstance(v, str) else "DATA_TYPE_FLOAT64")
            info = api_pb2.HParamInfo(name=k, type=api_pb2.DataType.Value(kind))
            if k in domains:
                vals = list(domains[k])
                if not all(type(d) is type(v) for d in vals):
                    raise TypeError(f"SummaryWriter.add_hparams(): hparam_domain_discrete[{k!r}] "
                                    f"must be a list of {type(v).__name__}, like hparam_dict")
                info.domain_discrete.extend(vals)
            hparams[k] = v
            infos.append(info)
        metrics = [api_pb2.MetricInfo(name=api_pb2.MetricName(tag=k)) for k in metric_dict]
        run_dir = os.path.join(self.log_dir, run_name or str(time.time()))
        with SummaryWriter(run_dir) as w:
            for summary in _hparams_summaries(hparams, infos, metrics):
                w._add(summary, None, None)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Log ``model``'s graph for TensorBoard's Graphs tab.

        The model runs once on ``input_to_model`` (a tensor or a tuple of them) in
        eval mode under ember's graph capture; nodes are grouped by module
        (``Net/Linear[fc1]/...``) and carry their output shapes, as torch's
        ``add_graph`` writes them.  ``use_strict_trace`` is accepted for torch's
        signature (capture records containers either way).

        Raises
        ------
        RuntimeError
            When the model cannot be captured as one graph (the message names the op).
        """
        from ember.nn import Module

        from ._graph import graph_def
        if not isinstance(model, Module):
            raise TypeError(f"SummaryWriter.add_graph(): model must be an nn.Module, got "
                            f"{type(model).__name__}")
        if input_to_model is None:
            raise ValueError("SummaryWriter.add_graph(): input_to_model is required (the "
                             "model runs once on it to record its graph)")
        graph, stats = graph_def(model, input_to_model, verbose)
        w = self._file_writer()
        w.add_event(Event(graph_def=graph.SerializeToString(), wall_time=time.time()))
        trm = TaggedRunMetadata(tag="step1", run_metadata=stats.SerializeToString())
        w.add_event(Event(tagged_run_metadata=trm, wall_time=time.time()))

    def flush(self) -> None:
        """Write pending events to disk."""
        for w in (self._writer, *self._sub_writers.values()):
            if w is not None:
                w.flush()

    def close(self) -> None:
        """Flush and close the event files (a later ``add_*`` opens a new one)."""
        for w in (self._writer, *self._sub_writers.values()):
            if w is not None:
                w.flush()
                w.close()
        self._writer = None
        self._sub_writers = {}

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
