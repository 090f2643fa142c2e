"""What a ``check_env`` check raises when it finds a problem (shared by its modules)."""

from __future__ import annotations

__all__ = ["_Fail"]


class _Fail(Exception):
    """A check's own finding, with the method to look at (and a hint, if not the check's)."""

    def __init__(self, method: str, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.method, self.hint = method, hint
