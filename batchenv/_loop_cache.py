"""The on-disk cache of per-env loops: numba compiles a class's loops once per machine and
version of its rules, not once per process.

numba's own ``cache=True`` cannot cache a closure over the class's kernels (its index key
hashes the pickled closure cells, and a compiled function pickles with a per-process id), so
:mod:`batchenv._loops` writes each class's loop as a small module,
``<cache dir>/_batchenv_loop_<Class>_<key>.py``: the loop template with numba's
``cache=True`` (numba keeps the machine code in ``__pycache__`` beside it), the kernels
injected as the module's globals before it runs. The namedtuple classes of the state and
the parameters live in :mod:`batchenv._loops`, named after their fields, so that numba's
cached signatures name them by reference in every process.

numba checks neither the functions a cached function calls nor the globals it froze in,
so the file's ``key`` hashes everything the compiled code depends on (:func:`key`), computed
when the loop is compiled (the moment numba freezes the globals): the loop's own files (the
template, ``_loops.py``, ``_borrow.py``, ``perenv.py``), the compile options, the state's
fields and dtypes and the parameters' names, the versions of Python, numpy, numba and
llvmlite, numba's settings (every ``NUMBA_*`` environment variable and a
``.numba_config.yaml`` in the working directory), the class's module and name, and the
kernels with everything they reach through their globals, transitively: the source file and
code of every function (numba-compiled, ``@rule`` or plain), the values of the constants,
arrays, enums and namedtuples they read (field names included), every attribute they read
from a module or class (``cfg.BONUS``), closure cells and default arguments. A change to any
of them gives a new file name: a stale machine code is never found. Old files are never read
again; deleting the directory is always safe.

A class whose kernels reach something this cannot hash (code without a source file, as in
an interactive session; an object of an unknown kind in a global or a closure cell) is not
cached: its loop is compiled in every process, as without the cache. An entry that cannot be
written or read (a full disk, a read-only or corrupt file) is the same: a warning, and the
loop compiled without the cache.

The directory: ``$BATCHENV_CACHE_DIR``, else ``$XDG_CACHE_HOME/batchenv``, else
``~/.cache/batchenv``; ``BATCHENV_CACHE_DIR=""`` turns the cache off.
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
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ENV_VAR", "cache_dir", "Uncachable", "key", "load", "warn_unusable", "discard"]

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


class _Digest:
    """A sha256 of a class's kernels and everything they reach (see the module docstring)."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()
        self.seen: set[int] = set()
        self.keep: list[Any] = []  # (so that ids in `seen` are not reused meanwhile)
        self.attributes: set[tuple[int, str]] = set()  # (module or class, name) hashed

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

    def attribute(self, owner: Any, name: str, what: str, names: set[str]) -> None:
        """Hash ``owner.name`` (a module's or class's attribute a kernel may read), once per
        owner and name: each function reaching ``owner`` adds the names it uses."""
        if name not in owner.__dict__ or (id(owner), name) in self.attributes:
            return
        self.attributes.add((id(owner), name))
        self.keep.append(owner)
        self.add("attribute", getattr(owner, "__qualname__", owner.__name__), name)
        value = owner.__dict__[name]
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        self.value(value, f"{what}.{name}", names)

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
            self.add(type(v).__name__, len(v), getattr(v, "_fields", None))  # (namedtuples:
            for item in v:  # kernels read their fields by name)
                self.value(item, what, names)
        elif isinstance(v, enum.Enum):
            self.add("enum", type(v).__module__, type(v).__qualname__, v.name)
            self.value(v.value, what, names)
            self.value(type(v), what, set())
        elif _is_jitted(v):  # numba.njit(...) function: its Python code and options
            if self.first_time(v):
                options = getattr(v, "targetoptions", {})
                self.add("jitted", sorted((k, repr(o)) for k, o in options.items()))
                self.function(v.py_func)
        elif isinstance(v, types.FunctionType):
            if _top(v.__module__) in _LIBRARIES:
                self.add("library function", v.__module__, v.__qualname__)
            else:
                self.function(v)
        elif isinstance(v, types.ModuleType):
            self.add("module", v.__name__)
            if _top(v.__name__) not in _LIBRARIES:
                for name in sorted(names):
                    self.attribute(v, name, what, names)
        elif isinstance(v, type):
            self.add("class", v.__module__, v.__qualname__, getattr(v, "_fields", None))
            if _top(v.__module__) not in _LIBRARIES:
                if self.first_time(v):
                    module = sys.modules.get(v.__module__)
                    self.file(getattr(module, "__file__", None), f"class {v.__qualname__}")
                for name in sorted(names):
                    self.attribute(v, name, what, names)
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


def _is_jitted(v: Any) -> bool:
    if "numba" not in sys.modules:
        return False
    from numba.extending import is_jitted

    return bool(is_jitted(v))


#: The package's files that make up the compiled loop (beside the author's kernels).
_LOOP_FILES = ("_loops_template.py", "_loops.py", "_borrow.py", "perenv.py")


def numba_settings() -> list[tuple[str, str]]:
    """What configures numba's code generation besides the code: its environment variables
    (``NUMBA_BOUNDSCHECK``, ``NUMBA_OPT``, ...) and a ``.numba_config.yaml`` in the working
    directory, which numba reads at import."""
    found = sorted((k, v) for k, v in os.environ.items() if k.startswith("NUMBA_"))
    try:
        found.append(("config", Path(".numba_config.yaml").read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError):
        pass
    return found


def key(cls: type, kernels: tuple[Callable[..., Any], ...], extra: Any) -> str:
    """The hex sha256 of everything ``cls``'s compiled loop depends on: ``extra`` (the
    compile options, the fields and their dtypes), the loop's files, the versions, numba's
    settings, and ``kernels`` with all they reach. Raises :class:`Uncachable`."""
    from importlib.metadata import version

    import numba

    digest = _Digest()
    digest.add(extra, sys.version, sys.implementation.cache_tag, np.__version__,
               numba.__version__, version("llvmlite"), numba_settings(), cls.__module__,
               cls.__qualname__)
    here = Path(__file__).parent
    for name in _LOOP_FILES:
        digest.file(str(here / name), name)
    for kernel in kernels:
        digest.value(kernel, f"{cls.__qualname__}.{getattr(kernel, '__name__', kernel)}",
                     set())
    return digest.hash.hexdigest()


_warned: set[str] = set()


def warn_unusable(cls: type, path: str | None, error: BaseException) -> None:
    """Say (once per entry) that the cache could not be used for ``cls``'s loop: it is
    compiled without it, with the same results."""
    where = path or "?"
    if where in _warned:
        return
    _warned.add(where)
    warnings.warn(f"batchenv: the compile cache entry {where} of {cls.__qualname__}'s per-env "
                  f"loop could not be used ({type(error).__name__}: {error}); compiled "
                  f"without the cache (the same results). Deleting the cache directory "
                  f"({ENV_VAR}) is always safe.", RuntimeWarning, stacklevel=2)


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


def discard(path: str | None) -> None:
    """Delete a cache entry that could not be used (the module and numba's files of it), so
    that the next process writes it anew; what cannot be deleted stays."""
    if not path:
        return
    module = Path(path)
    sys.modules.pop(module.stem, None)
    for found in [module, *module.parent.glob(f"__pycache__/{module.stem}.*")]:
        try:
            found.unlink()
        except OSError:
            pass
