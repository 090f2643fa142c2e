"""Testing tools for env authors (and tiny envs for testing RL code).

* :func:`check_env` runs the whole BatchEnv contract on your env and raises
  :class:`ContractError` listing every failed check (with the method to look at and a hint);
  :func:`contract_checks` gives one callable per check, for one pytest test each. No pytest
  needed otherwise. See ``docs/first_env.md``.
* :class:`CounterEnv` — the counter env of Gymnasium's auto-reset tests, batched.
* :class:`NullEnv` — empty kernels: what is left of a step is the base class's own cost.
"""

from batchenv.testing._envs import CounterEnv, NullEnv
from batchenv.testing.contract import (
    ContractCheck,
    ContractError,
    ContractReport,
    check_env,
    contract_checks,
)

__all__ = ["CounterEnv", "NullEnv", "check_env", "contract_checks", "ContractCheck",
           "ContractError", "ContractReport"]
