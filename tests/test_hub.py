"""ember.hub: checkpoints downloaded by URL (from a local HTTP server) into the cache,
loaded once, hash-checked; torch's own checkpoints load as ember state dicts."""
import hashlib
import http.server
import os
import threading
import zipfile

import numpy as np
import pytest

import ember


@pytest.fixture()
def server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    hits = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(root), **kw)

        def do_GET(self):
            hits.append(self.path)
            super().do_GET()

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{httpd.server_address[1]}", hits
    finally:
        httpd.shutdown()
        httpd.server_close()


def _state():
    return {"w": ember.arange(6.0).reshape(2, 3), "b": ember.tensor([1, 2])}


def test_get_and_set_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(ember.hub, "_hub_dir", [None])
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "c"))
    assert ember.hub.get_dir() == str(tmp_path / "c" / "hub")
    ember.hub.set_dir(tmp_path / "elsewhere")
    assert ember.hub.get_dir() == str(tmp_path / "elsewhere")


def test_load_state_dict_from_url_caches(server, tmp_path):
    root, base, hits = server
    ember.save(_state(), root / "model.pt")
    model_dir = tmp_path / "ckpt"
    for _ in range(2):
        sd = ember.hub.load_state_dict_from_url(f"{base}/model.pt", model_dir=str(model_dir),
                                                progress=False)
        np.testing.assert_array_equal(sd["w"].numpy(), np.arange(6.0).reshape(2, 3))
        assert sd["b"].dtype == ember.int64
    assert hits == ["/model.pt"]                  # the second call read the cache
    assert os.listdir(model_dir) == ["model.pt"]  # no partial files left


def test_torch_checkpoint_and_file_name(server, tmp_path):
    torch = pytest.importorskip("torch")
    root, base, _ = server
    tm = torch.nn.Linear(3, 2)
    torch.save(tm.state_dict(), root / "linear.pth")
    sd = ember.hub.load_state_dict_from_url(f"{base}/linear.pth", model_dir=str(tmp_path),
                                            file_name="renamed.pth", progress=True)
    assert (tmp_path / "renamed.pth").exists()
    em = ember.nn.Linear(3, 2)
    em.load_state_dict(sd)
    x = np.ones((1, 3), np.float32)
    np.testing.assert_allclose(em(ember.tensor(x)).detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-6)


def test_hash_check(server, tmp_path):
    root, base, _ = server
    ember.save(_state(), root / "tmp.pt")
    digest = hashlib.sha256((root / "tmp.pt").read_bytes()).hexdigest()
    (root / f"model-{digest[:8]}.pt").write_bytes((root / "tmp.pt").read_bytes())
    (root / "model-deadbeef.pt").write_bytes((root / "tmp.pt").read_bytes())
    sd = ember.hub.load_state_dict_from_url(f"{base}/model-{digest[:8]}.pt",
                                            model_dir=str(tmp_path), check_hash=True,
                                            progress=False)
    assert set(sd) == {"w", "b"}
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "deadbeef"'):
        ember.hub.load_state_dict_from_url(f"{base}/model-deadbeef.pt",
                                           model_dir=str(tmp_path), check_hash=True,
                                           progress=False)
    assert not (tmp_path / "model-deadbeef.pt").exists()
    assert [p for p in os.listdir(tmp_path) if "partial" in p] == []
    # without check_hash the name is only a name
    ember.hub.download_url_to_file(f"{base}/model-deadbeef.pt", str(tmp_path / "x.pt"),
                                   progress=False)
    assert (tmp_path / "x.pt").read_bytes() == (root / "tmp.pt").read_bytes()


def test_legacy_zip_checkpoint(server, tmp_path):
    root, base, _ = server
    ember.save(_state(), tmp_path / "inner.pt")
    with zipfile.ZipFile(root / "old.zip", "w") as zf:
        zf.write(tmp_path / "inner.pt", "inner.pt")
    sd = ember.hub.load_state_dict_from_url(f"{base}/old.zip",
                                            model_dir=str(tmp_path / "m"), progress=False)
    np.testing.assert_array_equal(sd["b"].numpy(), [1, 2])
    assert (tmp_path / "m" / "inner.pt").exists()
