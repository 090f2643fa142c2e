"""Shared memory of the sharded backends, with one owner.

The driver's :class:`Blocks` creates every block (``multiprocessing.shared_memory``),
names it per env instance and per use (``batchenv_<pid>_<random>_<use><n>_<key>``: a name
is never used twice, so a worker never writes into a block the driver no longer reads), and
unlinks it exactly once: when that use ends (``collect`` of another length), on ``close()``,
or, if the driver is killed, through the stdlib's resource tracker, with which creating a
block registers it. Workers and Ray actors only map a block, by its name under
``/dev/shm`` (:func:`attach`): they register nothing, so no process but the owner ever
unlinks it (no private API, no unregistering).

What the OS cannot do: after ``SIGKILL`` of the driver's whole process group (the resource
tracker included), the blocks stay in ``/dev/shm`` until the next reboot or an
``rm /dev/shm/batchenv_*``; so does a block whose creation a ``SIGKILL`` cut short before
the stdlib registered it.
"""

from __future__ import annotations

import glob
import mmap
import os
import secrets
from multiprocessing.shared_memory import SharedMemory
from typing import Any

import numpy as np

#: Prefix of every block's name (``/dev/shm/<prefix>...``).
SHM_PREFIX = "batchenv_"
SHM_DIR = "/dev/shm"

#: What a worker needs to map a block: (name, shape, dtype string).
Spec = tuple[str, tuple[int, ...], str]


def attach(spec: Spec) -> np.ndarray:
    """The array over block ``spec``: mapped from its file in ``/dev/shm``, registered
    nowhere. The mapping lives as long as any view of the array (so a view kept after
    ``close()`` stays readable), and goes with the last one."""
    name, shape, dtype = spec
    with open(os.path.join(SHM_DIR, name), "r+b") as file:
        mapping = mmap.mmap(file.fileno(), 0)
    return np.frombuffer(mapping, np.dtype(dtype), int(np.prod(shape))).reshape(shape)


class Attached:
    """A worker's mapped trajectory blocks: those of the current ``collect`` length only
    (a block of an earlier length, which the driver has unlinked, is unmapped once no view
    of it is left)."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def __call__(self, specs: dict[str, Spec]) -> dict[str, np.ndarray]:
        known = self.arrays
        self.arrays = {name: known[name] if name in known else attach((name, shape, dtype))
                       for name, shape, dtype in specs.values()}
        return {key: self.arrays[spec[0]] for key, spec in specs.items()}


class Blocks:
    """The shared-memory blocks of one env instance, owned by the process that made it."""

    def __init__(self) -> None:
        if not os.path.isdir(SHM_DIR):
            raise OSError(f"the process backend maps its shared memory from {SHM_DIR} "
                          f"(Linux); use backend='ray', or local_shard=True with one worker")
        self.owner = os.getpid()
        self.token = f"{SHM_PREFIX}{os.getpid()}_{secrets.token_hex(4)}_"
        self.blocks: dict[str, SharedMemory] = {}
        self.uses: dict[str, int] = {}  # sets of blocks made so far, per use: in names

    def new(self, layout: dict[str, tuple[tuple[int, ...], Any]], use: str
            ) -> tuple[dict[str, np.ndarray], dict[str, Spec]]:
        """A block per key of ``layout``, named for this ``use`` and never again: the
        arrays, and the specs a worker attaches them by."""
        arrays, specs = {}, {}
        number = self.uses[use] = self.uses.get(use, -1) + 1
        for key, (shape, dtype) in layout.items():
            dtype = np.dtype(dtype)
            name = f"{self.token}{use}{number}_{key}"
            block = SharedMemory(name=name, create=True,
                                 size=max(1, int(np.prod(shape)) * dtype.itemsize))
            self.blocks[name] = block
            block.close()  # the creator's own mapping: attach() maps the one we keep
            specs[key] = (name, tuple(shape), dtype.str)
            arrays[key] = attach(specs[key])
        return arrays, specs

    def unlink(self, specs: dict[str, Spec]) -> None:
        """Unlink the blocks of ``specs`` (their mappings go with their last views)."""
        for name, _shape, _dtype in specs.values():
            block = self.blocks.pop(name, None)
            if block is not None:
                block.unlink()

    def release(self) -> None:
        """Unlink every block, in the owner only (a child made by ``os.fork()`` inherits
        this object, not the blocks)."""
        if os.getpid() != self.owner:
            return
        for block in self.blocks.values():
            try:
                block.unlink()
            except FileNotFoundError:  # removed by hand meanwhile
                pass
        self.blocks.clear()
        # a block whose creation an interrupt cut short (Ctrl-C between the stdlib's
        # create and our bookkeeping) has our name: removed too
        for path in glob.glob(os.path.join(SHM_DIR, f"{self.token}*")):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def new_arrays(layout: dict[str, tuple[tuple[int, ...], Any]], blocks: Blocks | None,
               use: str) -> tuple[dict[str, np.ndarray], dict[str, Spec] | None]:
    """Arrays for ``layout``: in shared memory (with the specs to attach them) when
    ``blocks`` is given, else ordinary arrays (specs ``None``)."""
    if blocks is not None:
        return blocks.new(layout, use)
    return {key: np.zeros(shape, dtype) for key, (shape, dtype) in layout.items()}, None


class TrajectoryArrays:
    """``collect``'s (steps, n, ...) arrays, kept while the rollout length is unchanged and
    remade (their old blocks unlinked) when it changes; in shared memory when ``blocks``
    is given (workers attach them by ``specs``), else ordinary arrays."""

    def __init__(self, blocks: Blocks | None) -> None:
        self.blocks = blocks
        self.steps = 0
        self.arrays: dict[str, np.ndarray] = {}
        self.specs: dict[str, Spec] | None = None

    def get(self, steps: int, layout: dict[str, tuple[tuple[int, ...], Any]]
            ) -> tuple[dict[str, np.ndarray], dict[str, Spec] | None]:
        if steps != self.steps:
            if self.blocks is not None and self.specs is not None:
                self.blocks.unlink(self.specs)
            self.arrays, self.specs = new_arrays(layout, self.blocks, "traj")
            self.steps = steps
        return self.arrays, self.specs
