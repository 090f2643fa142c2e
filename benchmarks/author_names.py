"""The names an env author meets, counted for this checkout and another git revision: the
public attributes ``BatchEnv`` adds to Gymnasium's ``VectorEnv`` (class attributes to set,
kernels to write, the SyncVectorEnv shims), ``State``'s, ``BatchRandom``'s (the ``rng`` the
numpy kernels draw from), ``batchenv.state``'s and ``batchenv.perenv``'s ``__all__``, the
per-env hooks a class defines (``reset_env``, ..., ``kernel_params``, ...); and
the names the smallest env of each form needs (README's example, docs/writing_envs.md
section 7's Catch), which the code does not tell and are listed here by hand.

    python benchmarks/author_names.py [--ref c2c5b7d]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import gymnasium

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ab_versions import ROOT, extract, load_package  # noqa: E402

#: The optional per-env hooks a class may define (batchenv/perenv.py reads them by name).
PER_ENV_HOOKS = ("kernel_params", "kernel_views", "kernel_hidden_fields", "state_views")
#: What the smallest env needs, per form (README's MyEnv; writing_envs.md's Catch).
SMALLEST = {
    "numpy kernels": ["BatchEnv", "state_dtype", "single_action_space",
                      "single_observation_space", "reset_envs", "step_envs", "observe",
                      "rng.uniform (or another draw)"],
    "per-env kernels": ["BatchEnv", "state_dtype", "single_action_space",
                        "single_observation_space", "reset_env", "step_env", "observe_env",
                        "perenv.integers (or another draw)"],
}


def surface(pkg: ModuleType) -> dict[str, list[str]]:
    vector_env = set(dir(gymnasium.vector.VectorEnv))
    found = {
        "BatchEnv beyond VectorEnv": sorted(n for n in vars(pkg.BatchEnv)
                                            if not n.startswith("_") and n not in vector_env),
        "State": sorted(n for n in vars(pkg.State) if not n.startswith("_")),
        "BatchRandom": sorted(n for n in vars(pkg.BatchRandom) if not n.startswith("_")),
        "batchenv.state": sorted(pkg.state.__all__),
    }
    perenv = getattr(pkg, "perenv", None)
    found["batchenv.perenv"] = sorted(getattr(perenv, "__all__", []))
    # the per-env form's hooks, read from the class by name (batchenv/perenv.py's Runner)
    found["per-env class hooks"] = sorted([*getattr(perenv, "PER_ENV_KERNELS", ())]
                                          + (list(PER_ENV_HOOKS) if perenv else []))
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", default="c2c5b7d")
    ref = ap.parse_args().ref
    with tempfile.TemporaryDirectory() as tmp:
        for label, pkg in ((ref, load_package(extract(ref, tmp))),
                           ("this checkout", load_package(ROOT))):
            found = surface(pkg)
            total = sum(len(v) for v in found.values())
            print(f"{label}: {total} names")
            for where, names in found.items():
                print(f"  {where} ({len(names)}): {', '.join(names) or '-'}")
    for form, names in SMALLEST.items():
        print(f"the smallest env, {form} ({len(names)}): {', '.join(names)}")


if __name__ == "__main__":
    main()
