"""What every local service here (PostgreSQL, the whole cluster) does around a `with`."""

from __future__ import annotations

import abc
from typing import Self


class Service(abc.ABC):
    """Started on entering a `with` block and stopped on leaving it. A start that fails
    halfway stops what it had begun before the error goes on, so nothing is left running."""

    @abc.abstractmethod
    def start(self) -> None: ...

    @abc.abstractmethod
    def stop(self) -> None:
        """Also after a start that failed halfway."""

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
