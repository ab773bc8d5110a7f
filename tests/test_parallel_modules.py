"""nn.DataParallel and nn.SyncBatchNorm in one process, against torch (the multi-rank
SyncBatchNorm case is in test_distributed.py)."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from tests.conftest import copy_torch_weights

torch = pytest.importorskip("torch")


def test_data_parallel_calls_the_module_like_torch_without_gpus():
    if ember.cuda.is_available():
        pytest.skip("checks the CPU-only behaviour")
    rng = np.random.default_rng(0)
    tm = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()))
    em = nn.DataParallel(nn.Sequential(nn.Linear(4, 3), nn.ReLU()))
    assert em.device_ids == tm.device_ids == []
    assert list(em.state_dict()) == list(tm.state_dict()) == ["module.0.weight",
                                                              "module.0.bias"]
    copy_torch_weights(tm, em)
    assert isinstance(em.module, nn.Sequential) and em.module[0] is em.module._modules["0"]
    x = rng.standard_normal((5, 4)).astype(np.float32)
    ye, yt = em(ember.tensor(x)), tm(torch.tensor(x))
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-6)
    ye.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(em.module[0].weight.grad.numpy(),
                               tm.module[0].weight.grad.numpy(), rtol=1e-6)
    assert nn.parallel.data_parallel(em.module, ember.tensor(x)).shape == (5, 3)
    # a checkpoint of the wrapped model loads into the bare one after stripping the prefix
    bare = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    bare.load_state_dict({k[len("module."):]: v for k, v in em.state_dict().items()})


@pytest.mark.parametrize("train", [True, False])
def test_sync_batchnorm_without_a_group_is_batchnorm(train):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3, 6, 2)).astype(np.float32) * 3 + 1
    tm, em = torch.nn.SyncBatchNorm(3, momentum=0.2), nn.SyncBatchNorm(3, momentum=0.2)
    with torch.no_grad():
        tm.weight.uniform_(0.5, 1.5)
        tm.bias.uniform_(-1, 1)
    copy_torch_weights(tm, em)
    tm.train(train)
    em.train(train)
    xt, xe = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    yt, ye = tm(xt), em(xe)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    g = rng.standard_normal(x.shape).astype(np.float32)
    (yt * torch.tensor(g)).sum().backward()
    (ye * ember.tensor(g)).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(em.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-4)
    for k in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(em, k).numpy(), getattr(tm, k).numpy(), rtol=1e-5)
    with pytest.raises(ValueError, match="2D"):
        em(ember.ones(3))


def test_convert_sync_batchnorm_matches_torch():
    def build(lib):
        return lib.nn.Sequential(lib.nn.Conv2d(2, 4, 3), lib.nn.BatchNorm2d(4),
                                 lib.nn.Sequential(lib.nn.BatchNorm1d(4, affine=False)))
    tnet, enet = build(torch), build(ember)
    enet[1].running_mean.fill_(0.5)
    enet.eval()
    w = enet[1].weight
    tconv = torch.nn.SyncBatchNorm.convert_sync_batchnorm(tnet)
    econv = nn.SyncBatchNorm.convert_sync_batchnorm(enet)
    assert [type(m).__name__ for m in econv.modules()] == \
        [type(m).__name__ for m in tconv.modules()]
    assert list(econv.state_dict()) == list(tconv.state_dict())
    assert econv[1].weight is w                   # the layer's own parameters, not copies
    assert econv[1].running_mean.tolist() == [0.5] * 4 and not econv[1].training
    assert econv[2][0].weight is None and econv[2][0].eps == 1e-5
    bn = nn.BatchNorm1d(3, momentum=None)
    sb = nn.SyncBatchNorm.convert_sync_batchnorm(bn)
    assert isinstance(sb, nn.SyncBatchNorm) and sb.momentum is None
