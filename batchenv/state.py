"""Storage of a batch of env states: the schema is a structured dtype, the storage is
contiguous per field ("struct of arrays").

Why not one array of records? A kernel touches a few fields of every row; with records it
reads them with a stride of the whole record and numpy's ufunc inner loops lose their
contiguous fast path. ``benchmarks/bench_layout.py`` measures the two layouts on BatchPong's
step (figures in ``docs/layout.md``).

A :class:`State` is a plain object with one attribute per field, each an array whose first
axis is the env row; kernels read and write ``s.ball_x`` etc. directly. Scalar fields of the
same dtype are rows of one 2-D block (fields x envs), so every field is contiguous *and*
consecutive fields can be read as one ``(k, n)`` array (:func:`fields_view`), e.g. to write
a whole observation in one ufunc call. Moving rows between states copies whole blocks.
The rows of a block of 8 fields or more are padded to an odd number of cache lines, so such a
block is a view of a longer array: split its first axis, never flatten it (:func:`_new_block`
says why).

The schema can be written as a typed :class:`State` subclass, one annotation per field
(``ball_x: Field[np.float32]``, or ``Annotated[Field[np.uint8], (10, 10)]`` for a field of
shape ``(10, 10)`` per env): :func:`schema` makes the dtype from it, and type checkers and
IDEs then know every field of ``s`` in a kernel. The annotations are only read once, to make
the dtype: the fields are plain instance attributes either way.

A field may also declare its valid range, once, in the schema:
``Annotated[Field[np.int8], Range(0, 9)]`` (inclusive bounds; a bound may name an attribute
of the env, ``Range(0, "width - 1")``). :meth:`BatchEnv.set_state
<batchenv.core.BatchEnv.set_state>` refuses records outside it, debug mode checks it after
every step and ``check_env`` fuzzes states inside and outside it (:func:`ranges`).
"""

from __future__ import annotations

import operator
import re
import sys
import typing
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, NamedTuple, TypeVar

import numpy as np

__all__ = ["State", "Field", "Range", "schema", "ranges", "take_rows", "put_rows", "copy_row",
           "to_records", "from_records", "fields_view"]

_Scalar = TypeVar("_Scalar", bound=np.generic)
#: The type of a state field: an array (one row per env) of the given numpy scalar type.
Field = np.ndarray[Any, np.dtype[_Scalar]]


class Range(NamedTuple):
    """The valid values of a state field, both bounds included: ``Range(0, 9)``.

    A bound is a number, ``None`` (no bound on that side), or the name of an attribute of
    the env (or a dotted path to one), optionally negated, optionally with a constant added
    or subtracted (``"width - 1"``, ``"max_speed"``, ``"-params.ball_speed"``): for bounds
    that follow the env's parameters. Declare it in the field's
    annotation, ``Annotated[Field[np.int8], Range(0, 9)]`` (after the shape, if any), or,
    for a schema given as a dtype, in the class attribute ``state_ranges = {"x": (0, 9)}``.

    The range says which values the kernels are written for: any state whose fields are
    inside their ranges must be safe to step (no index out of bounds, in either kernel
    form). A rule between fields (a position not inside a wall) is ``check_state``'s.
    """

    low: float | str | None
    high: float | str | None

    def resolve(self, env: Any) -> tuple[float | None, float | None]:
        """The bounds as numbers, attribute names read on ``env``."""
        return _bound(self.low, env), _bound(self.high, env)

    def __str__(self) -> str:
        return f"[{_shown(self.low, '-inf')}, {_shown(self.high, 'inf')}]"


_BOUND_EXPRESSION = re.compile(
    r"\s*(-)?\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*(?:([+-])\s*(\d+(?:\.\d*)?))?\s*$")


def _bound(bound: float | str | None, env: Any) -> float | None:
    if bound is None or not isinstance(bound, str):
        return bound
    found = _BOUND_EXPRESSION.match(bound)
    if found is None:
        raise TypeError(f"Range bound {bound!r}: a number, None, or an env attribute name "
                        f"(or dotted path), optionally negated, with an optional '+ k' or "
                        f"'- k' (e.g. 'width - 1', '-params.max_speed')")
    negated, name, sign, amount = found.groups()
    value = operator.attrgetter(name)(env)
    value = -value if negated else value
    offset = 0 if amount is None else (float(amount) if "." in amount else int(amount))
    return value - offset if sign == "-" else value + offset


def _shown(bound: float | str | None, missing: str) -> str:
    return missing if bound is None else f"{bound:g}" if isinstance(bound, float) else str(bound)


def ranges(owner: Any) -> dict[str, Range]:
    """The declared ranges of the state fields of ``owner``: a :class:`State` subclass (its
    annotations), or a ``BatchEnv`` class or instance (its ``state_type``'s annotations,
    then its ``state_ranges``, which win)."""
    found: dict[str, Range] = {}
    state_type = owner if isinstance(owner, type) and issubclass(owner, State) else getattr(
        owner, "state_type", State)
    if state_type is not State:
        hints = typing.get_type_hints(state_type, include_extras=True)
        for name in _annotated_names(state_type):
            hint = hints[name]
            if typing.get_origin(hint) is Annotated:
                for extra in hint.__metadata__:
                    if isinstance(extra, Range):
                        found[name] = extra
    declared: Mapping[str, Any] = getattr(owner, "state_ranges", None) or {}
    for name, bounds in declared.items():
        found[name] = bounds if isinstance(bounds, Range) else Range(*bounds)
    return found


class State:
    """One array per field of ``dtype``, ``size`` rows each. Fields are attributes.

    Field names must not start with an underscore. A subclass may declare its fields as
    annotations (see :func:`schema`); every env's state also has the base class's columns,
    declared here.
    """

    # the columns BatchEnv adds to every env's schema (batchenv.core.BASE_FIELDS)
    elapsed_steps: Field[np.int64]
    rng_key: Field[np.uint64]
    rng_counter: Field[np.uint64]
    awaiting_reset: Field[np.bool_]

    def __init__(self, dtype: np.dtype, size: int) -> None:
        self._dtype = np.dtype(dtype)
        assert self._dtype.names is not None, "a State needs a structured dtype"
        self._size = int(size)
        self._slots: dict[str, tuple[str, int]] = {}  # field -> (block, row of block)
        fields = self._dtype.fields
        assert fields is not None
        for name in self._dtype.names:
            if name.startswith("_"):
                raise ValueError(f"state field names must not start with '_': {name!r}")
            field = fields[name][0]
            if field.shape == ():
                key = field.str
                self._slots[name] = (key, sum(1 for k, _ in self._slots.values() if k == key))
        self._allocate()

    def _allocate(self) -> None:
        """Zeroed storage for ``_size`` rows: a block per scalar dtype (:func:`_new_block`)
        and an array per shaped field, each starting at its own offset in the page
        (:func:`_staggered`)."""
        self._blocks: dict[str, np.ndarray] = {}  # base dtype -> (fields, rows) block
        counts: dict[str, int] = {}
        for key, _ in self._slots.values():
            counts[key] = counts.get(key, 0) + 1
        for key, count in counts.items():
            self._blocks[key] = _new_block(count, self._size, np.dtype(key), len(self._blocks))
        self._bind()
        fields = self._dtype.fields
        assert fields is not None
        shaped = [name for name in self._names() if name not in self._slots]
        for order, name in enumerate(shaped, start=len(self._blocks)):
            field = fields[name][0]
            _bind(self, name, _staggered((self._size, *field.shape), field.base, order))

    def _bind(self) -> None:
        for name, (key, row) in self._slots.items():
            _bind(self, name, self._blocks[key][row])
        self._views: dict[tuple[str, ...], np.ndarray] = {}  # fields_view's, made once

    @classmethod
    def schema(cls) -> np.dtype:
        """This class's fields as a structured dtype (:func:`schema`)."""
        return schema(cls)

    def __setattr__(self, name: str, value: object) -> None:
        # `s.x += v` rebinds s.x to the very same array: nothing to do. Any other binding
        # would leave the batch's storage behind (the base class would never see it).
        if self.__dict__.get(name) is value:
            return
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        if name in self._names():
            caller = sys._getframe(1).f_code.co_name  # the kernel, for the message
            raise AttributeError(
                f"State field {name!r} cannot be rebound (s.{name} = ..., in {caller}): update "
                f"it in place, e.g. s.{name}[:] = ..., s.{name} += ..., "
                f"np.add(a, b, out=s.{name})")
        raise AttributeError(f"State has no field {name!r}; its fields: "
                             f"{list(self._names())}")

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[tuple[str, np.ndarray]]:
        for name in self._names():
            yield name, getattr(self, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self._size}, fields={list(self._names())})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_from_records_new, (to_records(self), type(self)))

    def _names(self) -> tuple[str, ...]:
        return self._dtype.names or ()


_bind = object.__setattr__  # binds a field's array (the State's own __setattr__ refuses)


_LINE = 64  # bytes of a cache line
_PAGE = 4096  # an L1 data cache's set period (64 sets of 64-byte lines) and a page
# Blocks of fewer rows stay one contiguous array: their rows fit the L1's 8 ways even in one
# set, and numpy's 2-D passes over a contiguous (k, n) block are a few % faster (BatchPong's
# numpy kernels: docs/performance.md, "State layout: padded rows")
_PADDED_FROM = 8


def _new_block(count: int, size: int, dtype: np.dtype, order: int) -> np.ndarray:
    """A zeroed ``(count, size)`` block whose rows (fields) are an odd number of cache
    lines apart (a block of 8 rows or more; a smaller one is contiguous).

    Why: one env's fields sit at the same offset of every row, so with rows a multiple of
    4 KiB apart (``size * itemsize`` = 4096, 8192, ...: the usual powers-of-two batches)
    all of an env's fields fall in one set of the L1 cache (and with 2 KiB, 1 KiB apart in
    2, 4 sets), whose 8 ways cannot hold them: a per-env pass over a game with hundreds of
    slot columns (MinAtar Seaquest) then runs at half speed (docs/performance.md,
    "State layout: padded rows"). Rows an odd number of lines apart visit every set. The block is a
    ``(count, size)`` view of a longer one, so it is not contiguous as a whole: a row is,
    and splitting its first axis (``reshape(fields, slots, size)``) is a view, but
    flattening it (``reshape(-1)``) would be a copy."""
    stride = size
    if count >= _PADDED_FROM and _LINE % dtype.itemsize == 0:  # (a bytes field may not fit)
        lines = max(1, -(-size * dtype.itemsize // _LINE))
        stride = (lines + 1 - lines % 2) * _LINE // dtype.itemsize
    return _staggered((count, stride), dtype, order)[:, :size]


def _staggered(shape: tuple[int, ...], dtype: np.dtype, order: int) -> np.ndarray:
    """A zeroed C-contiguous array of ``shape`` whose first byte is cache line
    ``order * 5 % 64`` of its page: a State's arrays (allocated alike, so all at the same
    offset of their pages) then do not start in the same L1 set."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.zeros(nbytes + _PAGE + _LINE, dtype=np.uint8)
    start = (order * 5 % (_PAGE // _LINE) * _LINE - raw.ctypes.data) % _PAGE
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def _from_records_new(rec: np.ndarray, cls: type[State] = State) -> State:
    s = cls(rec.dtype, len(rec))
    from_records(s, rec)
    return s


def schema(cls: type[State]) -> np.dtype:
    """The structured dtype declared by the annotations of a :class:`State` subclass (and of
    its bases below :class:`State`), in declaration order::

        class PongState(State):
            ball_x: Field[np.float32]  # column of the ball centre
            grid: Annotated[Field[np.uint8], (10, 10)]  # a (10, 10) array per env

        PongState.schema()  # dtype([('ball_x', '<f4'), ('grid', 'u1', (10, 10))])
    """
    hints = typing.get_type_hints(cls, include_extras=True)
    descr: list[Any] = []
    for name in _annotated_names(cls):
        hint, shape = hints[name], ()
        if typing.get_origin(hint) is Annotated:
            shapes = [tuple(x) for x in hint.__metadata__ if not isinstance(x, Range)]
            hint, shape = hint.__origin__, shapes[0] if shapes else ()
        args = typing.get_args(hint)
        scalars = typing.get_args(args[1]) if len(args) == 2 else ()
        if typing.get_origin(hint) is not np.ndarray or len(scalars) != 1:
            raise TypeError(f"{cls.__name__}.{name}: annotate state fields as "
                            f"Field[<numpy scalar type>], got {hints[name]!r}")
        descr.append((name, scalars[0], shape) if shape else (name, scalars[0]))
    if not descr:
        raise TypeError(f"{cls.__name__} declares no fields")
    return np.dtype(descr)


def _annotated_names(cls: type) -> list[str]:
    """The field names the annotations of ``cls`` and its bases below State declare."""
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        if issubclass(klass, State) and klass is not State:
            names += [n for n in vars(klass).get("__annotations__", {}) if n not in names]
    return names


def fields_view(s: State, names: list[str] | tuple[str, ...]) -> np.ndarray:
    """Consecutive scalar fields of one dtype as a ``(len(names), len(s))`` view (made on
    the first call for these names, then cached: kernels call this every step)."""
    names = tuple(names)
    view = s._views.get(names)
    if view is None:
        key, first = s._slots[names[0]]
        for offset, name in enumerate(names):
            if s._slots.get(name) != (key, first + offset):
                raise ValueError(f"fields {list(names)} are not consecutive fields of one "
                                 f"dtype")
        view = s._views[names] = s._blocks[key][first:first + len(names)]
    return view


def _others(s: State) -> Iterator[str]:
    return (name for name in s._names() if name not in s._slots)


_S = TypeVar("_S", bound=State)


def take_rows(s: _S, idx: np.ndarray) -> _S:
    """A new State holding copies of rows ``idx`` of ``s`` (laid out as a new State)."""
    out = type(s).__new__(type(s))
    out._dtype, out._size, out._slots = s._dtype, len(idx), s._slots
    out._allocate()
    for key, block in s._blocks.items():
        np.take(block, idx, axis=1, out=out._blocks[key])
    for name in _others(s):
        np.take(getattr(s, name), idx, axis=0, out=getattr(out, name))
    return out


def put_rows(s: State, idx: np.ndarray, src: State) -> None:
    """Write the rows of ``src`` into rows ``idx`` of ``s``."""
    for key, block in s._blocks.items():
        block[:, idx] = src._blocks[key]
    for name in _others(s):
        getattr(s, name)[idx] = getattr(src, name)


def copy_row(dst: State, dst_row: int, src: State, src_row: int) -> None:
    """Row ``src_row`` of ``src`` into row ``dst_row`` of ``dst`` (a State of the same
    schema): one copy per block and per shaped field."""
    for key, block in src._blocks.items():
        dst._blocks[key][:, dst_row] = block[:, src_row]
    for name in _others(src):
        getattr(dst, name)[dst_row] = getattr(src, name)[src_row]


def to_records(s: State) -> np.ndarray:
    """The state as a structured array (one record per row), a copy."""
    rec = np.empty(len(s), dtype=s._dtype)
    for name, col in s:
        rec[name] = col
    return rec


def from_records(s: State, rec: np.ndarray, idx: np.ndarray | None = None) -> None:
    """Write structured records into ``s`` (all rows, or rows ``idx``)."""
    for name, col in s:
        if idx is None:
            col[...] = rec[name]
        else:
            col[idx] = rec[name]
