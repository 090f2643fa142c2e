"""The error a failed shard raises in the driver."""

from __future__ import annotations


class ShardError(RuntimeError):
    """A shard's worker raised, died or did not answer in time.

    Attributes: ``shard`` (its index), ``rows`` (``range`` of the env indices it holds),
    ``others`` (indices of other shards that failed in the same call). The worker's own
    exception, when it could be sent back, is the ``__cause__``. After a ``ShardError`` the
    env is unusable (the batch is no longer one consistent step): ``close()`` it.
    """

    def __init__(self, shard: int, start: int, stop: int, message: str,
                 others: list[int] | None = None) -> None:
        self.shard = shard
        self.rows = range(start, stop)
        self.others = others or []
        more = f" (shards {self.others} failed too)" if self.others else ""
        super().__init__(f"shard {shard} (rows {start}..{stop - 1}) {message}{more}")
