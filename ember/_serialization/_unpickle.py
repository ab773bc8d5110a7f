"""A pickle interpreter for files that are not trusted (``weights_only=True``).

``pickle.Unpickler.find_class`` only filters which globals a file may name; the
file still chooses what REDUCE calls with which arguments, and BUILD sets
attributes on whatever is below it on the stack (a class it named, say).  This
interpreter runs the opcodes itself and allows only:

- globals that ``Policy.resolve`` returns (it raises to refuse the rest);
- REDUCE on the reconstructors in ``Policy.calls``, each a function that checks
  its arguments (``set`` takes a list, never a lazy iterable), plus the classes
  and functions the user allowed with ``add_safe_globals``;
- NEWOBJ on ``complex`` and on allowed classes; BUILD on ``OrderedDict`` /
  ``Counter`` (their attribute dict) and on instances of allowed classes;
- APPEND(S) on lists, SETITEM(S) on dicts, ADDITEMS on sets, persistent ids
  through ``persistent_load``.

Strings, bytes and ints are read from the pickle itself, so what a file declares
cannot make this allocate more than the file holds.  The result's nesting depth
is checked (without recursion) so that a hostile file cannot hand back an object
that overflows the stack of whatever walks it next."""
from __future__ import annotations

import codecs
import pickle
import struct
from collections import Counter, OrderedDict, defaultdict

from ember._serialization import CheckpointError

MAX_DEPTH = 1000       # ember.save and torch.save cannot write deeper containers either

_U8, _U16, _I32, _U32, _U64 = (struct.Struct(f) for f in ("<B", "<H", "<i", "<I", "<Q"))
_F64 = struct.Struct(">d")
_MARK = object()       # on the stack: where MARK was (never visible to a callable)


class Refused(pickle.UnpicklingError):
    """The file asks for something ``weights_only=True`` does not allow."""


class Passthrough(Exception):
    """Carries an error of the caller's own code (a ``map_location`` callable) through
    the interpreter unchanged."""

    def __init__(self, error):
        super().__init__(error)
        self.error = error


# -- the reconstructors REDUCE may call: each takes only concrete data --------------
_SEQ = (list, tuple, set, frozenset)


def _seq(name, x):
    if type(x) not in _SEQ:
        raise TypeError(f"{name}() takes a list, tuple or set here, not {type(x).__name__}")
    return x


def _set(x=()):
    return set(_seq("set", x))


def _frozenset(x=()):
    return frozenset(_seq("frozenset", x))


def _odict(x=()):
    return OrderedDict(x if type(x) in (dict, OrderedDict) else _seq("OrderedDict", x))


def _counter(x=()):
    if type(x) is not dict and type(x) not in _SEQ:
        raise TypeError("Counter() takes a dict here")
    return Counter(x)


_FACTORIES = (None, list, dict, set, int, float, str, tuple, OrderedDict, Counter)


def _defaultdict(factory=None):
    if not any(factory is f for f in _FACTORIES):
        raise TypeError("defaultdict() takes a builtin container or number type as its factory")
    return defaultdict(factory)


_TEXT = ("latin1", "latin-1", "utf-8", "utf8")


def _bytearray(x=b"", encoding=None):
    if type(x) is str and encoding in _TEXT:
        return bytearray(x, encoding)
    if type(x) is bytes and encoding is None:
        return bytearray(x)
    raise TypeError("bytearray() takes bytes or (str, encoding) here")


def codecs_encode(s, encoding="utf-8"):
    """``_codecs.encode``, as protocol-2 pickles spell bytes: str -> bytes only."""
    if type(s) is not str or encoding not in _TEXT:
        raise TypeError("_codecs.encode: only str -> bytes (latin1/utf-8) allowed")
    return codecs.encode(s, encoding)


def _complex(re=0.0, im=0.0):
    if type(re) not in (int, float, str) or type(im) not in (int, float):
        raise TypeError("complex() takes numbers here")
    return complex(re, im)


def _slice(*args):
    if len(args) > 3 or any(a is not None and type(a) is not int for a in args):
        raise TypeError("slice() takes ints or None here")
    return slice(*args)


def _range(*args):
    if not 1 <= len(args) <= 3 or any(type(a) is not int for a in args):
        raise TypeError("range() takes ints here")
    return range(*args)          # lazy: no reconstructor here iterates it


# (object found by name, function REDUCE calls instead)
BASE_CALLS = [(OrderedDict, _odict), (Counter, _counter), (defaultdict, _defaultdict),
              (set, _set), (frozenset, _frozenset), (bytearray, _bytearray),
              (codecs_encode, codecs_encode), (complex, _complex), (slice, _slice),
              (range, _range)]
# Names a file may use as plain values (a defaultdict factory, a type in a config).
BASE_GLOBALS = {
    "collections.OrderedDict": OrderedDict, "collections.Counter": Counter,
    "collections.defaultdict": defaultdict, "_codecs.encode": codecs_encode,
    "builtins.set": set, "builtins.frozenset": frozenset, "builtins.complex": complex,
    "builtins.slice": slice, "builtins.bytearray": bytearray, "builtins.range": range,
    "builtins.bool": bool, "builtins.int": int, "builtins.float": float, "builtins.str": str,
    "builtins.list": list, "builtins.tuple": tuple, "builtins.dict": dict,
    "builtins.bytes": bytes,
}


class Policy:
    """What one load allows: ``resolve(module, name)`` gives a global's object (or
    raises :class:`Refused`); ``calls`` pairs objects REDUCE may call with the
    function called; the user's safe globals are added to both."""

    def __init__(self, resolve, calls=()):
        from ember import serialization

        self.resolve = resolve
        user = serialization.get_safe_globals()
        self.calls = {id(o): (o, f) for o, f in [*BASE_CALLS, *calls, *((u, u) for u in user)]}
        classes = [u for u in user if isinstance(u, type)]
        self.newobj = {id(c): c for c in [complex, *classes]}
        self.build = {id(c): c for c in classes}


class Unpickler:
    """``Unpickler(data, label, policy, persistent_load).load()``."""

    def __init__(self, data, label: str, policy: Policy, persistent_load, what="the pickle"):
        self.data = memoryview(data).toreadonly()
        self.pos = 0
        self.label, self.policy, self.what = label, policy, what
        self.persistent_load = persistent_load
        self.memo = {}
        self.stack = []

    # -- errors ------------------------------------------------------------------
    def bad(self, why: str) -> CheckpointError:
        return CheckpointError(f"{self.label}: malformed {self.what} ({why}): the file is "
                               f"corrupted or was not written by torch.save or ember.save")

    def refuse(self, why: str) -> Refused:
        return Refused(f"Weights only load failed: {self.label}: {why}, which weights_only=True "
                       f"does not allow. If you trust the file, load it with weights_only=False "
                       f"(only for files from a trusted source: unpickling can run arbitrary "
                       f"code).")

    # -- reading the pickle ---------------------------------------------------------
    def read(self, n: int) -> memoryview:
        p = self.pos
        if n < 0 or p + n > len(self.data):
            raise self.bad("it ends in the middle of an opcode")
        self.pos = p + n
        return self.data[p:p + n]

    def unpack(self, st):
        return st.unpack(self.read(st.size))[0]

    def readline(self) -> str:
        data, p = self.data, self.pos
        end = bytes(data[p:p + 512]).find(b"\n")
        if end < 0:
            raise self.bad("a GLOBAL name is not terminated")
        self.pos = p + end + 1
        return bytes(data[p:p + end]).decode("utf-8")

    def pop_mark(self) -> list:
        st = self.stack
        for i in range(len(st) - 1, -1, -1):
            if st[i] is _MARK:
                items = st[i + 1:]
                del st[i:]
                return items
        raise self.bad("no MARK before a MARK-consuming opcode")

    def pop(self):
        if not self.stack or self.stack[-1] is _MARK:
            raise self.bad("stack underflow")
        return self.stack.pop()

    def top(self):
        if not self.stack or self.stack[-1] is _MARK:
            raise self.bad("stack underflow")
        return self.stack[-1]

    # -- the run ---------------------------------------------------------------------
    def load(self):
        ops = _OPS
        try:
            while True:
                code = self.read(1)[0]
                op = ops.get(code)
                if op is None:
                    raise self.bad(f"opcode {bytes([code])!r} at byte {self.pos - 1} is not "
                                   f"one a weights-only pickle uses")
                if op(self):
                    break
        except (CheckpointError, pickle.UnpicklingError, MemoryError):
            raise
        except Passthrough as p:
            raise p.error from None
        except Exception as e:   # the reconstructors reject bad arguments with many types
            raise self.bad(f"{type(e).__name__}: {str(e)[:200]}") from None
        result = self.pop()
        check_depth(result, self.bad)
        return result


def check_depth(obj, bad, limit: int = MAX_DEPTH) -> None:
    """Raise ``bad(...)`` when containers nest deeper than ``limit`` (cycles allowed)."""
    seen = set()
    todo = [(obj, 1)]
    while todo:
        x, d = todo.pop()
        t = type(x)
        if t is dict or t is OrderedDict or t is Counter or t is defaultdict:
            kids = list(x.values())
        elif t is list or t is tuple or t is set or t is frozenset:
            kids = x
        else:
            continue
        if id(x) in seen:
            continue
        seen.add(id(x))
        if d > limit:
            raise bad(f"containers nested more than {limit} deep")
        todo.extend((k, d + 1) for k in kids)


# -- opcodes -----------------------------------------------------------------------
def _push(value):
    def op(u):
        u.stack.append(value)
    return op


def _proto(u):
    if u.read(1)[0] > 5:
        raise u.bad("unknown pickle protocol")


def _frame(u):
    u.read(8)


def _stop(u):
    return True


def _mark(u):
    u.stack.append(_MARK)


def _pop(u):
    if u.stack and u.stack[-1] is _MARK:
        u.stack.pop()
    else:
        u.pop()


def _pop_mark(u):
    u.pop_mark()


def _dup(u):
    u.stack.append(u.top())


def _int(st):
    def op(u):
        u.stack.append(u.unpack(st))
    return op


def _long(st):
    def op(u):
        u.stack.append(int.from_bytes(u.read(u.unpack(st)), "little", signed=True))
    return op


def _binfloat(u):
    u.stack.append(u.unpack(_F64))


def _unicode(st):
    def op(u):
        u.stack.append(str(u.read(u.unpack(st)), "utf-8", "surrogatepass"))
    return op


def _bytes(st):
    def op(u):
        u.stack.append(bytes(u.read(u.unpack(st))))
    return op


def _bytearray8(u):
    u.stack.append(bytearray(u.read(u.unpack(_U64))))


def _binstring(st):          # Python 2 str: ASCII text, as torch.load reads it
    def op(u):
        u.stack.append(str(u.read(u.unpack(st)), "ascii"))
    return op


def _tuple(u):
    u.stack.append(tuple(u.pop_mark()))


def _tuple_n(n):
    def op(u):
        st = u.stack
        if len(st) < n or any(x is _MARK for x in st[len(st) - n:]):
            raise u.bad("stack underflow")
        st[len(st) - n:] = [tuple(st[len(st) - n:])]
    return op


def _list(u):
    u.stack.append(u.pop_mark())


def _dict(u):
    items = u.pop_mark()
    if len(items) % 2:
        raise u.bad("DICT with an odd number of items")
    u.stack.append({items[i]: items[i + 1] for i in range(0, len(items), 2)})


def _frozenset_op(u):
    u.stack.append(frozenset(u.pop_mark()))


def _append(u):
    v = u.pop()
    lst = u.top()
    if type(lst) is not list:
        raise u.refuse(f"APPEND to a {type(lst).__name__} (only lists)")
    lst.append(v)


def _appends(u):
    items = u.pop_mark()
    lst = u.top()
    if type(lst) is not list:
        raise u.refuse(f"APPENDS to a {type(lst).__name__} (only lists)")
    lst.extend(items)


_DICTS = (dict, OrderedDict, Counter, defaultdict)


def _setitem(u):
    v = u.pop()
    k = u.pop()
    d = u.top()
    if type(d) not in _DICTS:
        raise u.refuse(f"SETITEM on a {type(d).__name__} (only dicts)")
    d[k] = v


def _setitems(u):
    items = u.pop_mark()
    d = u.top()
    if type(d) not in _DICTS:
        raise u.refuse(f"SETITEMS on a {type(d).__name__} (only dicts)")
    if len(items) % 2:
        raise u.bad("SETITEMS with an odd number of items")
    for i in range(0, len(items), 2):
        d[items[i]] = items[i + 1]


def _additems(u):
    items = u.pop_mark()
    s = u.top()
    if type(s) is not set:
        raise u.refuse(f"ADDITEMS on a {type(s).__name__} (only sets)")
    s.update(items)


def _get(st):
    def op(u):
        i = u.unpack(st)
        if i not in u.memo:
            raise u.bad(f"memo key {i} read before it was written")
        u.stack.append(u.memo[i])
    return op


def _put(st):
    def op(u):
        u.memo[u.unpack(st)] = u.top()
    return op


def _memoize(u):
    u.memo[len(u.memo)] = u.top()


def _global(u):
    module = u.readline()
    name = u.readline()
    u.stack.append(u.policy.resolve(module, name))


def _stack_global(u):
    name = u.pop()
    module = u.pop()
    if type(module) is not str or type(name) is not str:
        raise u.bad("STACK_GLOBAL needs two strings")
    u.stack.append(u.policy.resolve(module, name))


def _what(x) -> str:
    if isinstance(x, type):
        return f"the class {x.__module__}.{x.__qualname__}"
    qn = getattr(x, "__qualname__", None)
    if isinstance(qn, str):
        return f"{getattr(x, '__module__', '?')}.{qn}"
    return f"a {type(x).__name__} object"


def _reduce(u):
    args = u.pop()
    func = u.top()
    entry = u.policy.calls.get(id(func))
    if entry is None or entry[0] is not func:
        raise u.refuse(f"the file calls {_what(func)} to rebuild an object")
    if type(args) is not tuple:
        raise u.bad("REDUCE arguments are not a tuple")
    u.stack[-1] = entry[1](*args)


def _newobj(u):
    args = u.pop()
    cls = u.pop()
    if u.policy.newobj.get(id(cls)) is not cls:
        raise u.refuse(f"the file creates an instance of {_what(cls)}")
    if type(args) is not tuple:
        raise u.bad("NEWOBJ arguments are not a tuple")
    if cls is complex:
        u.stack.append(_complex(*args))
    else:
        u.stack.append(cls.__new__(cls, *args))


def _build(u):
    state = u.pop()
    inst = u.top()
    t = type(inst)
    if t is OrderedDict or t is Counter:
        if type(state) is not dict or not all(type(k) is str for k in state):
            raise u.bad(f"BUILD state of an {t.__name__} is not a dict of str")
        inst.__dict__.update(state)
        return
    if u.policy.build.get(id(t)) is not t:
        raise u.refuse(f"the file sets attributes on {_what(inst)} (BUILD works on "
                       f"OrderedDict and on classes allowed with add_safe_globals only)")
    setstate = getattr(inst, "__setstate__", None)
    if setstate is not None:
        setstate(state)
        return
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    if state:
        inst.__dict__.update(state)
    if slots:
        for k, v in slots.items():
            setattr(inst, k, v)


def _binpersid(u):
    u.stack.append(u.persistent_load(u.pop()))


_OPS = {
    pickle.PROTO[0]: _proto, pickle.FRAME[0]: _frame, pickle.STOP[0]: _stop,
    pickle.MARK[0]: _mark, pickle.POP[0]: _pop, pickle.POP_MARK[0]: _pop_mark,
    pickle.DUP[0]: _dup,
    pickle.NONE[0]: _push(None), pickle.NEWTRUE[0]: _push(True),
    pickle.NEWFALSE[0]: _push(False),
    pickle.BININT[0]: _int(_I32), pickle.BININT1[0]: _int(_U8), pickle.BININT2[0]: _int(_U16),
    pickle.LONG1[0]: _long(_U8), pickle.LONG4[0]: _long(_U32), pickle.BINFLOAT[0]: _binfloat,
    pickle.BINUNICODE[0]: _unicode(_U32), pickle.SHORT_BINUNICODE[0]: _unicode(_U8),
    pickle.BINUNICODE8[0]: _unicode(_U64),
    pickle.BINBYTES[0]: _bytes(_U32), pickle.SHORT_BINBYTES[0]: _bytes(_U8),
    pickle.BINBYTES8[0]: _bytes(_U64), pickle.BYTEARRAY8[0]: _bytearray8,
    pickle.BINSTRING[0]: _binstring(_I32), pickle.SHORT_BINSTRING[0]: _binstring(_U8),
    pickle.EMPTY_TUPLE[0]: lambda u: u.stack.append(()), pickle.TUPLE[0]: _tuple,
    pickle.TUPLE1[0]: _tuple_n(1), pickle.TUPLE2[0]: _tuple_n(2), pickle.TUPLE3[0]: _tuple_n(3),
    pickle.EMPTY_LIST[0]: lambda u: u.stack.append([]), pickle.LIST[0]: _list,
    pickle.APPEND[0]: _append, pickle.APPENDS[0]: _appends,
    pickle.EMPTY_DICT[0]: lambda u: u.stack.append({}), pickle.DICT[0]: _dict,
    pickle.SETITEM[0]: _setitem, pickle.SETITEMS[0]: _setitems,
    pickle.EMPTY_SET[0]: lambda u: u.stack.append(set()), pickle.ADDITEMS[0]: _additems,
    pickle.FROZENSET[0]: _frozenset_op,
    pickle.BINGET[0]: _get(_U8), pickle.LONG_BINGET[0]: _get(_U32),
    pickle.BINPUT[0]: _put(_U8), pickle.LONG_BINPUT[0]: _put(_U32),
    pickle.MEMOIZE[0]: _memoize,
    pickle.GLOBAL[0]: _global, pickle.STACK_GLOBAL[0]: _stack_global,
    pickle.REDUCE[0]: _reduce, pickle.NEWOBJ[0]: _newobj, pickle.BUILD[0]: _build,
    pickle.BINPERSID[0]: _binpersid,
}
