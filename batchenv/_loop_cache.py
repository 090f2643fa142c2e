"""The on-disk cache of per-env loops: numba compiles a class's loops once per machine and
version of its rules, not once per process.

numba's own ``cache=True`` cannot cache a closure over the class's kernels (its index key
hashes the pickled closure cells, and a compiled function pickles with a per-process id), so
:mod:`batchenv.perenv` writes each class's loops as a small generated module,
``<cache dir>/<Class>_<key>.py``: the loops as top-level functions decorated with numba's
``cache=True`` (numba keeps the machine code in ``__pycache__`` beside it), the kernels
injected as the module's globals before it runs. The namedtuple classes of the state and
the parameters live in :mod:`batchenv.perenv`, named after their fields (one class per
list of fields, shared by the env classes that have it), so that numba's cached signatures
name them by reference in every process (numba tells namedtuple types apart by class).

numba checks neither the functions a cached function calls nor the globals it froze in,
so the file's ``key`` hashes everything the compiled code depends on (:func:`key`): the
generated text (the loop template and the tuples' fields), the versions of Python, numpy,
numba and llvmlite, the class's module and name, the fields' dtypes, perenv.py, and the
kernels with everything they reach through their globals, transitively (the source file and
code of every function, numba-compiled or ``@rule``, and ``@overload`` implementations; the
values of the constants, arrays and enums they read; closure cells and default arguments).
A change to any of them gives a new file name: a stale machine code is never found. Old
files are never read again; deleting the directory is always safe.

A class whose kernels reach something this cannot hash (code without a source file, as in
an interactive session; an object of an unknown kind in a global or a closure cell) is not
cached: its loops are compiled in every process, as without the cache.

The directory: ``$BATCHENV_CACHE_DIR``, else ``$XDG_CACHE_HOME/batchenv``, else
``~/.cache/batchenv``; ``BATCHENV_CACHE_DIR=""`` turns the cache off. An unwritable
directory turns it off too (the same results, compiled in every process).
"""

from __future__ import annotations

import dis
import enum
import functools
import hashlib
import importlib.util
import logging
import os
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ENV_VAR", "cache_dir", "Uncachable", "key", "load"]

#: The environment variable naming the cache directory ("" turns the cache off).
ENV_VAR = "BATCHENV_CACHE_DIR"

log = logging.getLogger("batchenv.perenv")

# Packages whose functions the kernels may call but whose code is pinned by the versions in
# the key (walking into numpy's or numba's own code would hash half of them).
_LIBRARIES = frozenset({"numpy", "numba", "llvmlite", "math", "cmath", "builtins",
                        "operator", "collections", "typing", "enum", "abc"})


def cache_dir() -> Path | None:
    """The directory of the generated loop modules, or None when the cache is off."""
    chosen = os.environ.get(ENV_VAR)
    if chosen is not None:
        return Path(chosen).expanduser() if chosen else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "batchenv"


class Uncachable(Exception):
    """The kernels reach something :func:`key` cannot hash; the message says what."""


@functools.cache
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    # (mtime and size in the arguments: a file edited while the process runs is read again)
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _top(module_name: Any) -> str:
    return str(module_name or "").partition(".")[0]


def _overloads() -> dict[Any, list[Any]]:
    """numba's ``@overload`` (and ``register_jitable``) implementations by the function they
    stand for: the code numba compiles for a call to that function."""
    from numba.core.typing.templates import builtin_registry

    found: dict[Any, list[Any]] = {}
    for func, typ in builtin_registry.globals:
        for template in getattr(typ, "templates", ()):
            impl = getattr(template, "_overload_func", None)
            if impl is not None:
                options = getattr(template, "_jit_options", {})
                try:
                    found.setdefault(func, []).append((impl, sorted(options.items())))
                except TypeError:  # (an unhashable func: not a global a kernel names)
                    pass
    return found


class _Digest:
    """A sha256 of a class's kernels and everything they reach (see the module docstring)."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()
        self.seen: set[int] = set()
        self.keep: list[Any] = []  # (so that ids in `seen` are not reused meanwhile)
        self.overloads: dict[Any, list[Any]] | None = None

    def add(self, *parts: Any) -> None:
        for part in parts:
            self.hash.update(repr(part).encode())
            self.hash.update(b"\0")

    def first_time(self, obj: Any) -> bool:
        if id(obj) in self.seen:
            return False
        self.seen.add(id(obj))
        self.keep.append(obj)
        return True

    def file(self, path: str | None, what: str) -> None:
        if not path or not os.path.isfile(path):
            raise Uncachable(f"{what} has no source file ({path!r})")
        st = os.stat(path)
        self.add("file", _file_digest(path, st.st_mtime_ns, st.st_size))  # (content only:
        # the same code in another checkout finds the same machine code)

    def code(self, code: types.CodeType) -> None:
        self.add("code", code.co_name, code.co_code, code.co_names, code.co_varnames,
                 code.co_freevars, code.co_cellvars, code.co_argcount, code.co_flags)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                self.code(const)
            else:
                self.add(const)

    def function(self, f: types.FunctionType) -> None:
        if not self.first_time(f):
            return
        code = f.__code__
        what = f"{f.__module__}.{f.__qualname__}"
        self.add("function", what)
        self.file(code.co_filename, what)
        self.code(code)
        self.value(f.__defaults__, f"{what} (defaults)", set())
        self.value(sorted((f.__kwdefaults__ or {}).items()), f"{what} (defaults)", set())
        for cell in f.__closure__ or ():
            try:
                content = cell.cell_contents
            except ValueError:  # (an empty cell)
                content = None
            self.value(content, f"{what} (closure)", set())
        names = set(_names(code))  # (attributes it may read from a module or class)
        for name in sorted(set(_global_names(code))):
            if name in f.__globals__:
                self.add("global", name)
                self.value(f.__globals__[name], f"{what}: global {name!r}", names)
        if self.overloads is None:
            self.overloads = _overloads()
        for impl, options in self.overloads.get(f, ()):
            self.add("overload", options)
            self.value(impl, f"{what} (its @overload)", set())

    def value(self, v: Any, what: str, names: set[str]) -> None:
        """Hash a value a kernel reads (numba freezes globals into the machine code) or a
        function or module it reaches; ``names``: the names the reading code uses, for the
        attributes it may read from a module or class."""
        if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
            self.add(type(v).__name__, v)
        elif isinstance(v, np.ndarray):
            self.add("array", v.dtype.str, v.shape,
                     hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest())
        elif isinstance(v, np.generic):
            self.add("scalar", v.dtype.str, v.tobytes())
        elif isinstance(v, (tuple, list)):
            self.add(type(v).__name__, len(v))
            for item in v:
                self.value(item, what, names)
        elif isinstance(v, enum.Enum):
            self.add("enum", type(v).__module__, type(v).__qualname__, v.name)
            self.value(v.value, what, names)
            self.value(type(v), what, set())
        elif _is_dispatcher(v):  # numba.njit(...) function: its Python code and options
            if self.first_time(v):
                self.add("dispatcher", sorted((k, repr(o)) for k, o in v.targetoptions.items()))
                self.function(v.py_func)
        elif isinstance(v, types.FunctionType):
            if _top(v.__module__) in _LIBRARIES:
                self.add("library function", v.__module__, v.__qualname__)
            else:
                self.function(v)
        elif isinstance(v, types.ModuleType):
            self.add("module", v.__name__)
            if _top(v.__name__) not in _LIBRARIES and self.first_time(v):
                for name in sorted(names):
                    if name in v.__dict__:
                        self.add("attribute", name)
                        self.value(v.__dict__[name], f"{what}.{name}", names)
        elif isinstance(v, type):
            self.add("class", v.__module__, v.__qualname__)
            if _top(v.__module__) not in _LIBRARIES and self.first_time(v):
                module = sys.modules.get(v.__module__)
                self.file(getattr(module, "__file__", None), f"class {v.__qualname__}")
                for name in sorted(names):
                    if name in v.__dict__:
                        self.add("attribute", name)
                        attr = v.__dict__[name]
                        if isinstance(attr, (staticmethod, classmethod)):
                            attr = attr.__func__
                        self.value(attr, f"{what}.{name}", names)
        elif callable(getattr(v, "_defn", None)):  # numba's @intrinsic: its code generator
            if self.first_time(v):
                self.add("intrinsic")
                self.function(v._defn)
        elif _top(getattr(v, "__module__", None)) in _LIBRARIES or \
                _top(type(v).__module__) in _LIBRARIES:  # ufuncs, numba types, ...
            self.add("library object", type(v).__qualname__, repr(v))
        else:
            raise Uncachable(f"{what} is a {type(v).__qualname__}, which the cache key "
                             f"cannot hash")


def _names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


def _global_names(code: types.CodeType) -> Iterator[str]:
    """The globals ``code`` (and the code nested in it) reads: not every name of
    ``co_names``, which holds attribute names too (``p.x`` beside a global ``x``)."""
    for instr in dis.get_instructions(code):
        if instr.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            yield instr.argval
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _global_names(const)


def _is_dispatcher(v: Any) -> bool:
    if "numba" not in sys.modules:
        return False
    from numba.core.dispatcher import Dispatcher

    return isinstance(v, Dispatcher)


def key(cls: type, kernels: tuple[Callable[..., Any], ...], text: str, extra: Any) -> str:
    """The hex sha256 of everything ``cls``'s compiled loops depend on: ``text`` (the
    generated module), ``extra`` (the compile options, the fields' dtypes), the versions,
    perenv.py, and ``kernels`` with all they reach. Raises :class:`Uncachable`."""
    from importlib.metadata import version

    import numba

    digest = _Digest()
    digest.add(text, extra, sys.version, sys.implementation.cache_tag, np.__version__,
               numba.__version__, version("llvmlite"), cls.__module__, cls.__qualname__)
    digest.file(sys.modules[__name__.rpartition(".")[0] + ".perenv"].__file__, "perenv")
    for kernel in kernels:
        digest.value(kernel, f"{cls.__qualname__}.{getattr(kernel, '__name__', kernel)}",
                     set())
    return digest.hash.hexdigest()


def load(name: str, text: str, directory: Path, injected: dict[str, Any]) -> types.ModuleType:
    """Write ``text`` as ``<directory>/<name>.py`` (unless there already, the same) and run
    it as the module ``name`` with ``injected`` as globals set before it runs. Raises
    OSError when the directory cannot be written."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    path = directory / f"{name}.py"
    try:
        same = path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        same = False
    if not same:
        directory.mkdir(parents=True, exist_ok=True)
        temporary = directory / f".{name}.{os.getpid()}.tmp"
        try:
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, path)  # (atomic: another process may write it too)
        finally:
            temporary.unlink(missing_ok=True)
    if not os.access(directory, os.W_OK):  # (numba writes its cache files beside it)
        raise PermissionError(f"{directory} is not writable")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(injected)
    sys.modules[name] = module  # (numba's cached signatures name its classes through it)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
