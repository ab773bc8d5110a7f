"""ember.utils.tensorboard.SummaryWriter: event files read back with TensorBoard's own reader."""

import glob
import os
import subprocess
import sys

import numpy as np
import pytest

import ember

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing import event_accumulator  # noqa: E402

from ember.utils.tensorboard import SummaryWriter  # noqa: E402


def load(path, **size):
    acc = event_accumulator.EventAccumulator(
        str(path), size_guidance={"scalars": 0, "histograms": 0, "images": 0, "tensors": 0})
    acc.Reload()
    return acc


def test_scalars(tmp_path):
    with SummaryWriter(tmp_path) as w:
        assert w.get_logdir() == str(tmp_path)
        for step in range(5):
            w.add_scalar("loss", ember.tensor(1.0 / (step + 1)), step)
        w.add_scalar("lr", 0.25, 7, walltime=123.0)
        w.add_scalar("acc", np.float32(0.5), 1, new_style=True)
        with pytest.raises(ValueError, match="one element"):
            w.add_scalar("bad", ember.ones(2), 0)
    acc = load(tmp_path)
    loss = acc.Scalars("loss")
    assert [e.step for e in loss] == list(range(5))
    np.testing.assert_allclose([e.value for e in loss], [1, 1 / 2, 1 / 3, 1 / 4, 1 / 5],
                               rtol=1e-6)
    (lr,) = acc.Scalars("lr")
    assert (lr.step, lr.value, lr.wall_time) == (7, 0.25, 123.0)
    (acc_t,) = acc.Tensors("acc")
    assert acc_t.step == 1 and acc_t.tensor_proto.float_val == [0.5]


def test_add_scalars_writes_one_run_per_key(tmp_path):
    w = SummaryWriter(tmp_path)
    for step in range(3):
        w.add_scalars("run", {"train": float(step), "val": 2.0 * step}, step)
    w.close()
    for key, scale in (("train", 1.0), ("val", 2.0)):
        acc = load(tmp_path / f"run_{key}")
        assert [e.value for e in acc.Scalars("run")] == [scale * s for s in range(3)]


def test_histogram_matches_numpy(tmp_path):
    ember.manual_seed(0)
    x = ember.randn(1000)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", x, 3)
        w.add_histogram("w10", x, 3, bins=10)
        w.add_histogram("half", x.to(ember.bfloat16), 3, bins="auto")
        with pytest.raises(ValueError, match="no values"):
            w.add_histogram("empty", ember.zeros(0))
    acc = load(tmp_path)
    xs = x.numpy().astype(np.float64)
    (h,) = acc.Histograms("w")
    v = h.histogram_value
    assert h.step == 3 and v.num == 1000
    np.testing.assert_allclose([v.min, v.max, v.sum, v.sum_squares],
                               [xs.min(), xs.max(), xs.sum(), (xs * xs).sum()], rtol=1e-9)
    assert sum(v.bucket) == 1000
    counts, edges = np.histogram(xs, bins=10)
    (h10,) = acc.Histograms("w10")
    assert list(h10.histogram_value.bucket) == counts.tolist()
    np.testing.assert_allclose(h10.histogram_value.bucket_limit, edges[1:])
    assert sum(acc.Histograms("half")[0].histogram_value.bucket) == 1000


def _decode(png):
    import io

    from PIL import Image  # decode with an independent PNG reader

    return np.asarray(Image.open(io.BytesIO(png)))


def test_images_round_trip(tmp_path):
    pytest.importorskip("PIL")
    ember.manual_seed(1)
    chw = ember.rand(3, 5, 7)
    hwc_u8 = (ember.rand(4, 6, 1) * 255).to(ember.uint8)
    batch = ember.rand(10, 1, 4, 3)
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", chw, 0)
        w.add_image("gray", hwc_u8, 1, dataformats="HWC")
        w.add_images("grid", batch, 2)
        with pytest.raises(ValueError, match="dataformats"):
            w.add_image("bad", chw, 0, dataformats="CHWX")
        with pytest.raises(ValueError, match="1, 3 or 4 channels"):
            w.add_image("bad", ember.rand(2, 4, 4))
    acc = load(tmp_path)
    (img,) = acc.Images("chw")
    assert (img.height, img.width) == (5, 7)
    expect = np.clip(chw.numpy().transpose(1, 2, 0) * 255 + 0.5, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(_decode(img.encoded_image_string), expect)
    (gray,) = acc.Images("gray")
    np.testing.assert_array_equal(_decode(gray.encoded_image_string), hwc_u8.numpy()[:, :, 0])
    (grid,) = acc.Images("grid")
    assert (grid.height, grid.width) == (8, 24)  # 10 images, 8 per row -> 2 rows
    g = _decode(grid.encoded_image_string)
    b = np.clip(batch.numpy()[:, 0] * 255 + 0.5, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(g[4:8, 3:6], b[9])
    np.testing.assert_array_equal(g[4:8, 6:], 0)


def test_text_and_hparams(tmp_path):
    from tensorboard.plugins.hparams import plugin_data_pb2

    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "**lr** = 0.1", 4)
        w.add_hparams({"lr": 0.1, "bsize": 32, "opt": "sgd", "nesterov": True, "skip": None},
                      {"hparam/accuracy": 0.9}, hparam_domain_discrete={"opt": ["sgd", "adam"]},
                      run_name="trial0")
        with pytest.raises(TypeError, match="dicts"):
            w.add_hparams([("lr", 0.1)], {})
        with pytest.raises(TypeError, match="list of str"):
            w.add_hparams({"opt": "sgd"}, {}, hparam_domain_discrete={"opt": [1]})
        with pytest.raises(TypeError, match="must be a str"):
            w.add_text("notes", 3)
    acc = load(tmp_path)
    (t,) = acc.Tensors("notes/text_summary")
    assert t.step == 4 and t.tensor_proto.string_val == [b"**lr** = 0.1"]
    run = load(tmp_path / "trial0")
    assert [e.value for e in run.Scalars("hparam/accuracy")] == [pytest.approx(0.9)]
    content = run.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hp = start.session_start_info.hparams
    assert hp["lr"].number_value == 0.1 and hp["bsize"].number_value == 32
    assert hp["opt"].string_value == "sgd" and hp["nesterov"].bool_value is True
    assert "skip" not in hp
    exp = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"])
    names = {i.name: i for i in exp.experiment.hparam_infos}
    assert set(names) == {"lr", "bsize", "opt", "nesterov"}
    assert [v.string_value for v in names["opt"].domain_discrete.values] == ["sgd", "adam"]
    assert [m.name.tag for m in exp.experiment.metric_infos] == ["hparam/accuracy"]


def test_flush_makes_events_visible_and_purge_step(tmp_path):
    w = SummaryWriter(tmp_path, purge_step=2, filename_suffix=".ember")
    w.add_scalar("x", 1.0, 5)
    w.flush()
    (path,) = glob.glob(os.path.join(tmp_path, "events.out.tfevents.*.ember"))
    assert [e.value for e in load(tmp_path).Scalars("x")] == [1.0]
    w.close()
    w.add_scalar("x", 2.0, 6)  # after close a new event file is opened, as in PyTorch
    w.close()
    assert len(glob.glob(os.path.join(tmp_path, "events.out.tfevents.*"))) == 2


def test_default_logdir_has_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_lr0.1")
    w.close()
    assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_lr0.1")
    assert os.path.isdir(w.get_logdir())


def test_clear_import_error_without_tensorboard():
    code = ("import sys; sys.modules['tensorboard'] = None\n"
            "try:\n    import ember.utils.tensorboard\n"
            "except ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "needs the 'tensorboard' package" in out and "pip install tensorboard" in out


class _GraphNet(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = ember.nn.Linear(4, 3)
        self.act = ember.nn.ReLU()
        self.fc2 = ember.nn.Linear(3, 2)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * 2


def test_add_graph_reads_back_with_torchs_names(tmp_path):
    m = _GraphNet()
    m.train()
    with SummaryWriter(tmp_path) as w:
        w.add_graph(m, ember.randn(5, 4))
    assert m.training and m.fc1.training          # modes restored after the capture
    acc = load(tmp_path)
    assert acc.Tags()["graph"] and acc.Tags()["run_metadata"] == ["step1"]
    nodes = {n.name: n for n in acc.Graph().node}

    def shapes(n):
        return [[d.size for d in s.dim] for s in n.attr["_output_shapes"].list.shape]
    assert nodes["input/x"].op == "IO Node" and shapes(nodes["input/x"]) == [[5, 4]]
    linear = [n for n in nodes.values() if n.op == "aten::linear"]
    assert sorted(n.name.rsplit("/", 1)[0] for n in linear) == ["_GraphNet/Linear[fc1]",
                                                              "_GraphNet/Linear[fc2]"]
    fc1 = next(n for n in linear if "fc1" in n.name)
    assert fc1.input[0] == "input/x" and shapes(fc1) == [[5, 3]]
    w1 = nodes[fc1.input[1]]
    assert w1.op == "prim::GetAttr" and w1.name.startswith("_GraphNet/Linear[fc1]/weight/")
    assert shapes(w1) == [[3, 4]]
    relu = next(n for n in nodes.values() if n.op == "aten::relu")
    assert relu.name.startswith("_GraphNet/ReLU[act]/") and relu.input == [fc1.name]
    (out,) = [n for n in nodes.values() if n.name.startswith("output/")]
    assert out.name == "output/output.1" and shapes(out) == [[5, 2]]
    mul = nodes[out.input[0]]
    assert mul.op == "aten::mul" and mul.name.startswith("_GraphNet/") and "2" in \
        mul.attr["attr"].s.decode()
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.act, self.fc2 = (torch.nn.Linear(4, 3), torch.nn.ReLU(),
                                            torch.nn.Linear(3, 2))

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x))) * 2
    tdir = tmp_path / "torch"
    with TorchWriter(str(tdir)) as tw:
        tw.add_graph(TNet(), torch.randn(5, 4))
    tnodes = load(tdir).Graph().node
    # the same op kinds under the same module scopes as torch's graph
    want = sorted((n.name.rsplit("/", 1)[0].replace("TNet", "_GraphNet"), n.op)
                  for n in tnodes if n.op.startswith("aten::"))
    got = sorted((n.name.rsplit("/", 1)[0], n.op) for n in nodes.values()
                 if n.op.startswith("aten::"))
    assert got == want


def test_add_graph_errors(tmp_path):
    class Branchy(ember.nn.Module):
        def forward(self, x):
            return x * float(np.from_dlpack(x).max())     # a view escapes: not capturable

    with SummaryWriter(tmp_path) as w:
        with pytest.raises(TypeError, match="nn.Module"):
            w.add_graph(lambda x: x, ember.ones(2))
        with pytest.raises(ValueError, match="input_to_model"):
            w.add_graph(_GraphNet())
        with pytest.raises(RuntimeError, match="add_graph.*'__dlpack__'"):
            w.add_graph(Branchy(), ember.ones(2))


def test_add_graph_of_a_model_that_reads_a_value(tmp_path):
    class Gate(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ember.nn.Linear(3, 3)

        def forward(self, x):
            h = self.lin(x)
            return h * 2 if h.sum() > 0 else -h

    with SummaryWriter(tmp_path) as w:
        w.add_graph(Gate(), ember.randn(2, 3))
    ops = [n.op for n in load(tmp_path).Graph().node]
    assert ops.count("aten::item") == 1 and "aten::linear" in ops and "aten::gt" in ops
