"""CRC-32 (zip's) of big buffers on several threads.

A buffer is cut into a short first piece and then pieces of exactly ``CHUNK``
bytes; each piece's CRC is computed independently (``zlib.crc32`` releases the
GIL) and the results are folded together with zlib's ``crc32_combine`` algorithm.
Because every piece after the first has the same length, the combine operator
(a 32x32 matrix over GF(2): "append CHUNK zero bytes") is built once."""
from __future__ import annotations

import os
import zlib

CHUNK = 4 << 20
SMALL = 1 << 20          # below this, one zlib.crc32 call on the calling thread
_OP = None


def _times(mat, vec: int) -> int:
    s = i = 0
    while vec:
        if vec & 1:
            s ^= mat[i]
        vec >>= 1
        i += 1
    return s


def _square(mat):
    return [_times(mat, mat[n]) for n in range(32)]


def _zeros_operator(nbytes: int):
    """The matrix that maps crc(A) to the raw contribution of A in crc(A + B),
    len(B) == nbytes (zlib's crc32_combine, as a reusable operator)."""
    odd = [0xEDB88320] + [1 << n for n in range(31)]   # one zero bit
    even = _square(odd)                                 # two zero bits
    odd = _square(even)                                 # four zero bits
    op = [1 << n for n in range(32)]                    # identity
    n = nbytes
    while True:
        even = _square(odd)
        if n & 1:
            op = [_times(even, v) for v in op]
        n >>= 1
        if not n:
            break
        odd = _square(even)
        if n & 1:
            op = [_times(odd, v) for v in op]
        n >>= 1
        if not n:
            break
    return op


def _op():
    global _OP
    if _OP is None:
        _OP = _zeros_operator(CHUNK)
    return _OP


def pieces(n: int):
    """(start, end) of the pieces of an n-byte buffer: a short first one, then CHUNKs."""
    first = n % CHUNK or min(n, CHUNK)
    out = [(0, first)]
    for a in range(first, n, CHUNK):
        out.append((a, a + CHUNK))
    return out


def fold(crcs) -> int:
    """The CRC of the whole buffer from its pieces' CRCs (see :func:`pieces`)."""
    it = iter(crcs)
    crc = next(it)
    op = _op()
    for c in it:
        crc = _times(op, crc) ^ c
    return crc


def workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


class Pool:
    """A few threads computing piece CRCs; use as a context manager."""

    def __init__(self):
        from concurrent.futures import ThreadPoolExecutor

        self.ex = ThreadPoolExecutor(workers(), thread_name_prefix="ember-crc")
        _op()

    def submit(self, view):
        """Start the CRC of a whole buffer; returns a callable that waits for it."""
        n = view.nbytes
        if n < SMALL:
            c = zlib.crc32(view)
            return lambda: c
        futs = [self.ex.submit(zlib.crc32, view[a:b]) for a, b in pieces(n)]
        return lambda: fold(f.result() for f in futs)

    def submit_piece(self, view):
        return self.ex.submit(zlib.crc32, view)

    def close(self):
        self.ex.shutdown(wait=True, cancel_futures=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
