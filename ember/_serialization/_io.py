"""Bytes in and out: storage buffers, the aligned zip writer, the checked zip reader,
atomic saves and memory maps.

The zip writer is ours (not ``zipfile``'s) so that every data member starts on a
64-byte boundary of the file (padding goes into a local-header extra field, as
PyTorch does) and so that it needs no seeking: sizes and CRCs are known before
a member is written, so it streams to pipes too.  Reading uses ``zipfile`` for
the central directory and reads member data straight into ember storages."""
from __future__ import annotations

import ctypes
import io
import mmap as _mmap
import os
import struct
import sys
import zipfile
import zlib

from ember._C import core
from ember._serialization import CheckpointError, _crc

ALIGN = 64
# Sizes/offsets at or above this use zip64 records (tests lower it to exercise zip64).
ZIP64_LIMIT = 0xFFFFFFFF
_DOS_TIME, _DOS_DATE = 0, (0 << 9) | (1 << 5) | 1      # 1980-01-01 00:00: reproducible files
_PAD_ID = 0x4246                                       # "FB", the id PyTorch's writer pads with
_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_EOCD = struct.Struct("<IHHHHIIH")
_EOCD64 = struct.Struct("<IQHHIIQQQQ")
_LOC64 = struct.Struct("<IIQI")
_DEFLATE_RATIO = 1032          # the most output deflate can encode per input byte
_INFLATE_PIECE = 1 << 20


# ----------------------------------------------------------------------------
# raw memory

def buffer(ptr: int, nbytes: int) -> memoryview:
    """A writable byte view of ``nbytes`` at ``ptr`` (the owner must outlive it)."""
    if nbytes == 0:
        return memoryview(bytearray())
    return memoryview((ctypes.c_char * nbytes).from_address(ptr)).cast("B")


def storage_bytes(s):
    """(bytes view, owner) of a Storage, copied to the CPU first when it lives elsewhere;
    keep ``owner`` alive while the view is in use."""
    dev = s.device
    if dev.type != "cpu":
        if dev.type == "meta":
            raise ValueError("meta storages have no data")
        s = core._from_storage(s, (s.nbytes(),), (1,), core.uint8, 0).cpu().untyped_storage()
    return buffer(s.data_ptr(), s.nbytes()), s


class MappedFile:
    """Owner of a private (copy-on-write) memory map: tensors made over it keep it alive."""

    def __init__(self, fileobj):
        self.mmap = _mmap.mmap(fileobj.fileno(), 0, access=_mmap.ACCESS_COPY)
        self._anchor = ctypes.c_char.from_buffer(self.mmap)
        self.base = ctypes.addressof(self._anchor)
        self.size = len(self.mmap)
        self.name = getattr(fileobj, "name", None)

    def storage(self, offset: int, nbytes: int):
        if nbytes == 0:
            return core._new_storage(0)
        t = core._make_tensor(self.base + offset, (nbytes,), (1,), core.uint8, "cpu", self,
                              0, nbytes)
        return t.untyped_storage()

    def __repr__(self):
        return f"<ember MappedFile {self.name!r} size={self.size}>"


# ----------------------------------------------------------------------------
# file naming, atomic writes

def is_path(f) -> bool:
    return isinstance(f, (str, bytes, os.PathLike))


def describe(f) -> str:
    """How error messages name a file: its path, else the file object."""
    if is_path(f):
        return repr(os.fsdecode(os.fspath(f)))
    name = getattr(f, "name", None)
    if isinstance(name, (str, bytes)) and name:
        return repr(os.fsdecode(name))
    return f"<{type(f).__name__} object>"


_sync = getattr(os, "fdatasync", os.fsync)      # data + size reach the disk


try:
    import fcntl as _fcntl
except ImportError:                     # Windows: temporaries are not locked nor cleaned
    _fcntl = None

_TEMP_TAG = ".ember-save-"


def _temp_name(base: str, token: str) -> str:
    return f".{base}{_TEMP_TAG}{token}.tmp"


def _is_our_temp(entry: str, base: str) -> bool:
    """Exactly the names :func:`_open_temp` makes for ``base``: nothing else matches."""
    head = f".{base}{_TEMP_TAG}"
    token = entry[len(head):-len(".tmp")]
    return (entry.startswith(head) and entry.endswith(".tmp") and len(token) == 12
            and all(c in "0123456789abcdef" for c in token))


def _try_lock(fd: int) -> bool:
    """Take an exclusive lock without waiting; False if another open file holds it
    (or the file system cannot lock, where nothing may be assumed)."""
    try:
        _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
        return True
    except OSError:
        return False


def remove_stale_temps(final_path: str) -> list:
    """Delete the temporaries that earlier saves to ``final_path`` left behind when
    they were killed.  A save holds a lock on its temporary until it is renamed, and
    the system drops the lock when the process dies, so a temporary whose lock can be
    taken belongs to no running save; one in use is left alone.  Returns the paths
    removed."""
    if _fcntl is None:
        return []
    folder, base = os.path.split(final_path)
    removed = []
    try:
        entries = [e for e in os.scandir(folder or ".") if _is_our_temp(e.name, base)]
    except OSError:
        return removed
    for e in entries:
        try:
            if not e.is_file(follow_symlinks=False):
                continue
            fd = os.open(e.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            if _try_lock(fd) and os.path.samestat(os.fstat(fd), os.lstat(e.path)):
                os.unlink(e.path)
                removed.append(e.path)
        except OSError:
            pass
        finally:
            os.close(fd)                  # drops the lock
    return removed


def _open_temp(final_path: str):
    """A new file beside ``final_path`` (same folder, so the rename is atomic), locked
    while it is written so that :func:`remove_stale_temps` knows it is in use."""
    folder, base = os.path.split(final_path)
    for _ in range(100):
        tmp = os.path.join(folder, _temp_name(base, os.urandom(6).hex()))
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o666)
        except FileExistsError:
            continue
        except FileNotFoundError:
            raise FileNotFoundError(f"ember.save: the folder of {final_path!r} does not "
                                    f"exist") from None
        except PermissionError as e:
            raise PermissionError(f"ember.save: cannot create a file in the folder of "
                                  f"{final_path!r} ({e.strerror})") from None
        if _fcntl is not None:
            # A cleaner may have taken the new file for a stale one between its creation
            # and our lock: then it is unlinked (no links left) and we start again.
            if not _try_lock(fd) or os.fstat(fd).st_nlink == 0:
                os.close(fd)
                continue
        return os.fdopen(fd, "wb"), tmp
    raise FileExistsError(f"could not create a temporary file beside {final_path!r}")


_SFR = None
_WRITEBACK_EVERY = 16 << 20


def _sync_file_range():
    """Linux's sync_file_range (through libc), or None elsewhere."""
    global _SFR
    if _SFR is None:
        _SFR = False
        if sys.platform.startswith("linux"):
            try:
                fn = ctypes.CDLL(None, use_errno=True).sync_file_range
                fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
                fn.restype = ctypes.c_int
                _SFR = fn
            except (OSError, AttributeError):
                pass
    return _SFR or None


class _EarlyWriteback:
    """Starts the disk writes of every 16 MiB as soon as it is written
    (SYNC_FILE_RANGE_WRITE: no waiting), so the final fsync has little left to do
    and the disk works while the next storages are CRC'd and copied."""

    def __init__(self, f, sfr):
        self.f, self.sfr, self.fd = f, sfr, f.fileno()
        self.pos = self.started = 0

    def write(self, b):
        n = self.f.write(b)
        self.pos += memoryview(b).nbytes
        if self.pos - self.started >= _WRITEBACK_EVERY:
            self.f.flush()
            self.sfr(self.fd, self.started, self.pos - self.started, 2)
            self.started = self.pos
        return n

    def __getattr__(self, name):
        return getattr(self.f, name)


def atomic_write(path, write) -> None:
    """Call ``write(fileobj)`` on a temporary file, flush and fsync it, then rename it
    over ``path``: readers see the old file or the complete new one, never a torn one."""
    final = os.path.realpath(os.fsdecode(os.fspath(path)))   # write through symlinks
    if os.path.isdir(final):
        raise IsADirectoryError(f"ember.save: {os.fsdecode(os.fspath(path))!r} is a directory")
    remove_stale_temps(final)
    f, tmp = _open_temp(final)
    renamed = False
    try:
        try:
            sfr = _sync_file_range()
            write(_EarlyWriteback(f, sfr) if sfr else f)
            f.flush()
            _sync(f.fileno())
            try:
                os.chmod(tmp, os.stat(final).st_mode & 0o7777)   # keep an existing file's mode
            except OSError:
                pass
            if _fcntl is None:
                f.close()                  # Windows renames closed files only
            os.replace(tmp, final)         # still locked: no cleaner can take it first
            renamed = True
        finally:
            f.close()
    except BaseException:
        if not renamed:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise
    if hasattr(os, "O_DIRECTORY"):                     # make the rename itself durable
        try:
            dfd = os.open(os.path.dirname(final) or ".", os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass


# ----------------------------------------------------------------------------
# zip writing

class ZipWriter:
    """Writes a zip archive of stored (uncompressed) members, each member's data
    aligned to ``ALIGN`` bytes of the underlying file."""

    def __init__(self, f):
        self.f = f
        self.pos = 0
        try:
            self.base = f.tell() if f.seekable() else 0
        except (AttributeError, OSError, ValueError):
            self.base = 0
        self.entries = []

    def add(self, name: str, data, crc=None, align: int = ALIGN) -> None:
        data = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
        nb = name.encode("utf-8")
        flags = 0 if name.isascii() else 0x800
        size = data.nbytes
        if crc is None:
            crc = zlib.crc32(data)
        zip64 = size >= ZIP64_LIMIT or self.pos >= ZIP64_LIMIT
        extra = struct.pack("<HHQQ", 1, 16, size, size) if zip64 else b""
        hdr = _LOCAL.size + len(nb) + len(extra)
        if align:
            pad = (-(self.base + self.pos + hdr)) % align
            if pad:
                if pad < 4:
                    pad += align
                extra += struct.pack("<HH", _PAD_ID, pad - 4) + bytes(pad - 4)
        s32 = 0xFFFFFFFF if zip64 else size
        head = _LOCAL.pack(0x04034B50, 45 if zip64 else 20, flags, 0, _DOS_TIME, _DOS_DATE,
                           crc, s32, s32, len(nb), len(extra))
        w = self.f.write
        w(head + nb + extra)
        if size:
            w(data)
        self.entries.append((nb, flags, crc, size, self.pos))
        self.pos += len(head) + len(nb) + len(extra) + size

    def close(self) -> None:
        start = self.pos
        parts = []
        for nb, flags, crc, size, off in self.entries:
            big = size >= ZIP64_LIMIT or off >= ZIP64_LIMIT
            extra = struct.pack("<HHQQQ", 1, 24, size, size, off) if big else b""
            s32 = 0xFFFFFFFF if big else size
            o32 = 0xFFFFFFFF if big else off
            parts.append(_CENTRAL.pack(0x02014B50, (3 << 8) | 45, 45 if big else 20, flags, 0,
                                       _DOS_TIME, _DOS_DATE, crc, s32, s32, len(nb), len(extra),
                                       0, 0, 0, 0o100644 << 16, o32) + nb + extra)
        cd = b"".join(parts)
        self.f.write(cd)
        end = start + len(cd)
        n = len(self.entries)
        if n >= 0xFFFF or start >= ZIP64_LIMIT or len(cd) >= ZIP64_LIMIT:
            self.f.write(_EOCD64.pack(0x06064B50, 44, (3 << 8) | 45, 45, 0, 0, n, n, len(cd),
                                      start))
            self.f.write(_LOC64.pack(0x07064B50, 0, end, 1))
            self.f.write(_EOCD.pack(0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF,
                                    0))
        else:
            self.f.write(_EOCD.pack(0x06054B50, 0, 0, n, n, len(cd), start, 0))
        self.pos = end


# ----------------------------------------------------------------------------
# zip reading

_PICKLE_HINT = ("it looks like a legacy PyTorch file (torch.save with "
                "_use_new_zipfile_serialization=False) or a plain pickle, which ember does not "
                "read: re-save it with torch.save's default (zip) format")


def _sniff(f, size) -> str:
    """Why a file that is not a readable zip archive is not one."""
    try:
        f.seek(0)
        head = f.read(16)
    except (OSError, ValueError):
        head = b""
    if size == 0 or not head:
        return "the file is empty"
    if head.startswith(b"PK\x03\x04"):
        return ("the zip archive is truncated or corrupted (its central directory is missing "
                "or damaged)")
    if head[:1] == b"\x80" or head.startswith(b"\x8a\x0a"):
        return _PICKLE_HINT
    if len(head) >= 9 and head[8:9] == b"{":
        return ("it looks like a safetensors file: read it with "
                "ember.serialization.load_safetensors")
    return f"it is not a zip archive (it starts with {head[:8]!r})"


class Archive:
    """A zip archive opened for reading, with checked access to its members."""

    def __init__(self, f, label: str):
        self.f = f
        self.label = label
        try:
            f.seek(0, 2)
            self.size = f.tell()
            f.seek(0)
        except (OSError, ValueError, AttributeError) as e:
            raise CheckpointError(f"{label}: the file must be seekable to be loaded ({e})") from e
        self._crc = None
        self._pending = []
        try:
            self.zf = zipfile.ZipFile(f)
            self.infos = {i.filename: i for i in self.zf.infolist()}
        except Exception as e:   # zipfile raises many types on damaged input
            why = _sniff(f, self.size)
            raise CheckpointError(f"{label}: {why} [{type(e).__name__}: {e}]") from None

    def fail(self, why: str):
        raise CheckpointError(f"{self.label}: {why}")

    def info(self, name: str):
        """A member's zip record, its declared sizes checked: nothing is allocated for a
        member before its size is known to be one the archive can really hold."""
        i = self.infos.get(name)
        if i is None:
            self.fail(f"member {name!r} is missing (the file is truncated or corrupted)")
        method = i.compress_type
        if method == zipfile.ZIP_STORED:
            if i.file_size != i.compress_size or i.compress_size > self.size:
                self.fail(f"member {name!r} has inconsistent sizes: the file is corrupted")
        elif method == zipfile.ZIP_DEFLATED:
            if i.compress_size > self.size or \
                    i.file_size > i.compress_size * _DEFLATE_RATIO + 1024:
                self.fail(f"member {name!r} declares {i.file_size} bytes from "
                          f"{i.compress_size} compressed bytes, more than deflate can "
                          f"produce: the file is corrupted or a zip bomb")
        else:
            self.fail(f"member {name!r} uses zip compression method {method}; ember reads "
                      f"stored and deflated members only")
        return i

    def read(self, name: str) -> bytes:
        """A small member's bytes, CRC-checked."""
        i = self.info(name)
        try:
            return self.zf.read(i)
        except zipfile.BadZipFile as e:
            if "CRC" in str(e):
                self.fail(f"CRC-32 mismatch in member {name!r}: the file is corrupted")
            self.fail(f"member {name!r} is damaged ({e})")
        except Exception as e:
            self.fail(f"member {name!r} is damaged ({type(e).__name__}: {e})")

    def data_offset(self, name: str, i=None) -> int:
        """Where a stored member's data starts in the file (its local header checked)."""
        i = i or self.info(name)
        if i.compress_type != zipfile.ZIP_STORED:
            return -1
        f = self.f
        try:
            f.seek(i.header_offset)
            h = f.read(_LOCAL.size)
        except (OSError, ValueError) as e:
            self.fail(f"cannot read member {name!r} ({e})")
        if len(h) != _LOCAL.size:
            self.fail(f"member {name!r} lies past the end of the file: the file is truncated")
        sig, _v, _fl, method, _t, _d, _crc, _cs, _us, nlen, xlen = _LOCAL.unpack(h)
        if sig != 0x04034B50 or method != 0:
            self.fail(f"bad local header for member {name!r}: the file is corrupted")
        raw = f.read(nlen)
        if raw.decode("utf-8", "replace") != i.orig_filename and \
                raw.decode("cp437") != i.orig_filename:
            self.fail(f"local header of member {name!r} names another member: the file is "
                      f"corrupted")
        start = i.header_offset + _LOCAL.size + nlen + xlen
        if start + i.file_size > self.size:
            self.fail(f"member {name!r} runs past the end of the file: the file is truncated")
        if i.compress_size != i.file_size:
            self.fail(f"member {name!r} has inconsistent sizes: the file is corrupted")
        return start

    def read_into(self, name: str, dest: memoryview, verify: bool = True) -> None:
        """Read a member's data into ``dest`` (exactly its size).  Its CRC is checked
        here for small members; big ones are checked on worker threads while the next
        pieces are read, and :meth:`finish` reports a mismatch."""
        i = self.info(name)
        n = dest.nbytes
        if i.file_size != n:
            self.fail(f"member {name!r} holds {i.file_size} bytes, the structure expects {n}: "
                      f"the file is corrupted")
        start = self.data_offset(name, i)
        if start < 0:                                # a compressed member (re-zipped file)
            self._inflate_into(name, i, dest)
            return
        self.f.seek(start)
        if verify and n >= _crc.SMALL:
            pool = self._pool()
            futs = []
            for a, b in _crc.pieces(n):
                self._read_exactly(dest[a:b], name)
                futs.append(pool.submit_piece(dest[a:b]))
            self._pending.append((name, i.CRC, futs))
            return
        self._read_exactly(dest, name)
        if verify and zlib.crc32(dest) != i.CRC:
            self.fail(f"CRC-32 mismatch in member {name!r}: the file is corrupted")

    def _inflate_into(self, name, info, dest) -> None:
        """Decompress a member straight into ``dest`` in bounded pieces (zipfile stops at
        the declared size and checks the CRC at its end)."""
        got, n = 0, dest.nbytes
        try:
            with self.zf.open(info) as src:
                while got < n:
                    piece = src.read(min(n - got, _INFLATE_PIECE))
                    if not piece:
                        break
                    dest[got:got + len(piece)] = piece
                    got += len(piece)
                src.read(1)                          # reaches the end: the CRC check
        except zipfile.BadZipFile as e:
            if "CRC" in str(e):
                self.fail(f"CRC-32 mismatch in member {name!r}: the file is corrupted")
            self.fail(f"member {name!r} is damaged ({e})")
        except (OSError, EOFError, ValueError, zlib.error) as e:
            self.fail(f"member {name!r} is damaged ({type(e).__name__}: {e})")
        if got != n:
            self.fail(f"member {name!r} is cut short: the file is truncated")

    def _read_exactly(self, dest, name):
        n, got, f = dest.nbytes, 0, self.f
        while got < n:
            k = f.readinto(dest[got:])
            if not k:
                self.fail(f"member {name!r} is cut short: the file is truncated")
            got += k

    def _pool(self):
        if self._crc is None:
            self._crc = _crc.Pool()
        return self._crc

    def finish(self) -> None:
        """Wait for the background CRC checks; raise on a mismatch."""
        pending, self._pending = self._pending, []
        for name, want, futs in pending:
            if _crc.fold(f.result() for f in futs) != want:
                self.fail(f"CRC-32 mismatch in member {name!r}: the file is corrupted")

    def close(self) -> None:
        pool, self._crc = self._crc, None
        if pool is not None:
            pool.close()


def open_for_read(f, label: str):
    """(file object, must_close) for a path or a readable binary file object."""
    if is_path(f):
        try:
            return open(f, "rb"), True
        except FileNotFoundError:
            raise FileNotFoundError(f"ember.load: no such file: {label}") from None
    if not hasattr(f, "read"):
        raise TypeError(f"expected a path or a binary file object, got {type(f).__name__}")
    if isinstance(f, io.TextIOBase):
        raise TypeError(f"{label}: open the file in binary mode ('rb'), not text mode")
    return f, False


def check_byteorder(label: str, order: str) -> None:
    if order != "little":
        raise CheckpointError(f"{label}: the data is {order}-endian; ember reads "
                              f"little-endian checkpoints only")
    if sys.byteorder != "little":
        raise CheckpointError(f"{label}: ember reads checkpoints on little-endian machines "
                              f"only")
