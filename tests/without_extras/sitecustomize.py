"""Put on PYTHONPATH, this makes the top-level packages named in $CITEAUDIT_TEST_WITHOUT
(comma-separated) look uninstalled to the process: importing one raises ModuleNotFoundError and
`importlib.util.find_spec` answers None, as when an optional extra is not installed."""

import os
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

WITHOUT = frozenset(filter(None, os.environ.get("CITEAUDIT_TEST_WITHOUT", "").split(",")))


class _Hiding:
    """A finder of sys.meta_path that finds nothing of the hidden packages."""

    def __init__(self, finder: Any) -> None:
        self._finder = finder

    def find_spec(
        self, name: str, path: Any = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name.partition(".")[0] in WITHOUT:
            return None
        return self._finder.find_spec(name, path, target)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._finder, name)


if WITHOUT:
    sys.meta_path[:] = [_Hiding(finder) for finder in sys.meta_path]
