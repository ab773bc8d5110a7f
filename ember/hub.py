"""``ember.hub``: download checkpoints by URL into a local cache and load them
(PyTorch's ``torch.hub`` file functions). ``ember.load`` reads PyTorch's checkpoint
files, so the published weights of torch models load as state dicts.

The cache is ``get_dir()``: ``$EMBER_CACHE_DIR/hub`` (default ``~/.cache/ember/hub``),
or what ``set_dir`` names. Loading models from GitHub repositories (``hub.load``,
``hub.list``, ``hub.help``) runs a repository's ``hubconf.py`` written for torch and is
not provided.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import zipfile
from typing import Any
from urllib.parse import urlparse
from urllib.request import Request, urlopen

__all__ = ["download_url_to_file", "get_dir", "set_dir", "load_state_dict_from_url"]

# a file name's ``-<hex digits>.`` part is a prefix of its SHA-256 (torch's convention)
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_READ_SIZE = 1 << 20

_hub_dir: list = [None]


def get_dir() -> str:
    """The directory downloads are cached in (``<dir>/checkpoints`` for weights)."""
    if _hub_dir[0] is not None:
        return _hub_dir[0]
    from ember.compiler.codegen.cache import cache_dir
    return str(cache_dir().parent / "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Cache downloads in ``d`` from now on."""
    _hub_dir[0] = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    """Download ``url`` to the file ``dst``.

    The bytes go to a temporary file beside ``dst`` that is renamed into place once
    complete (and, with ``hash_prefix``, once its SHA-256 starts with it), so ``dst``
    never holds a partial download.

    Raises
    ------
    RuntimeError
        The SHA-256 of the download does not start with ``hash_prefix``.
    """
    dst = os.path.expanduser(dst)
    with urlopen(Request(url, headers={"User-Agent": "ember.hub"})) as u:
        size = u.headers.get("Content-Length")
        total = int(size) if size is not None and size.isdigit() else None
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(dst) + ".",
                                   suffix=".partial", dir=os.path.dirname(dst) or ".")
        try:
            sha = hashlib.sha256()
            done = 0
            with os.fdopen(fd, "wb") as f:
                while True:
                    chunk = u.read(_READ_SIZE)
                    if not chunk:
                        break
                    f.write(chunk)
                    sha.update(chunk)
                    done += len(chunk)
                    if progress:
                        _report(done, total)
            if progress:
                sys.stderr.write("\n")
            digest = sha.hexdigest()
            if hash_prefix is not None and not digest.startswith(hash_prefix):
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got '
                                   f'"{digest}")')
            shutil.move(tmp, dst)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)


def _report(done: int, total: int | None) -> None:
    mb = done / (1 << 20)
    if total:
        sys.stderr.write(f"\r{100 * done / total:5.1f}% of {total / (1 << 20):.1f} MB")
    else:
        sys.stderr.write(f"\r{mb:.1f} MB")
    sys.stderr.flush()


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None,
                             progress: bool = True, check_hash: bool = False,
                             file_name: str | None = None,
                             weights_only: bool = False) -> dict[str, Any]:
    """The object saved at ``url`` (a checkpoint by ``torch.save`` or ``ember.save``),
    downloaded once into ``model_dir`` (default ``get_dir()/checkpoints``).

    Parameters
    ----------
    check_hash : bool
        Check the download against the SHA-256 prefix in its file name
        (``name-<hex>.ext``).
    file_name : str, optional
        The cached file's name (default: the last part of the URL's path).
    weights_only : bool
        Passed to :func:`ember.load` (ember's loader builds only tensors, containers
        and allowed globals either way).
    """
    import ember

    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        sys.stdout.write(f'Downloading: "{url}" to {cached}\n')
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached, match.group(1) if match else None,
                             progress=progress)
    if _legacy_zip(cached):
        # a zip holding one checkpoint (torch < 1.6 published weights so)
        with zipfile.ZipFile(cached) as zf:
            member = zf.infolist()[0]
            target = os.path.realpath(os.path.join(model_dir, member.filename))
            if not target.startswith(os.path.realpath(model_dir) + os.sep):
                raise RuntimeError(f"load_state_dict_from_url: {member.filename!r} would be "
                                   f"extracted outside {model_dir}")
            zf.extract(member, model_dir)
        cached = target
    return ember.load(cached, map_location=map_location, weights_only=weights_only)


def _legacy_zip(path: str) -> bool:
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as zf:
        members = zf.infolist()
    return len(members) == 1 and not members[0].is_dir()
