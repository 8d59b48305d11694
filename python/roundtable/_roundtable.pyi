# Stubs for the extension module roundtable._roundtable (crate roundtable-py).
# Checked against the built module by `python -m mypy.stubtest roundtable._roundtable`.
#
# Every function that calls into the core releases the GIL while it runs.
# Errors are raised as the roundtable.RoundtableError subclass of their code
# (see roundtable/_errors.py); a closed engine raises ValueError.

import os
from typing import Any, Dict, List, Optional, Tuple, Union, final

__all__ = ["__version__", "ERROR_CODES", "JSON_VERSION", "Actor", "Cancel", "Engine", "parse_patch", "apply_patch", "make_patch", "tools", "_raise_error"]

__version__: str
#: Every stable error code this build knows, in declaration order.
ERROR_CODES: Tuple[str, ...]
#: The version of the JSON surface this build speaks (`roundtable::tools::JSON_VERSION`).
JSON_VERSION: int

@final
class Actor:
    """Who is calling: an agent, a human or the orchestrator, with an id."""

    @staticmethod
    def agent(id: str) -> Actor: ...
    @staticmethod
    def human(id: str) -> Actor: ...
    @staticmethod
    def orchestrator(id: str) -> Actor: ...
    @staticmethod
    def parse(spelling: str) -> Actor: ...
    @property
    def kind(self) -> str: ...
    @property
    def id(self) -> str: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> Tuple[Any, Tuple[str]]: ...

@final
class Cancel:
    """A cancellation handle: give it to calls, then ``cancel()`` ends their waits."""

    def __new__(cls) -> Cancel: ...
    def cancel(self) -> None: ...
    @property
    def cancelled(self) -> bool: ...
    def child(self) -> Cancel: ...

@final
class Engine:
    """An open workspace: the repository root and its store."""

    @staticmethod
    def open(root: Union[str, os.PathLike[str]], options: Optional[Dict[str, Any]] = None) -> Engine: ...
    def call(
        self,
        actor: Actor,
        tool: str,
        args: Any,
        *,
        timeout_ms: Optional[int] = None,
        cancel: Optional[Cancel] = None,
    ) -> Any: ...
    def call_record(
        self,
        actor: Actor,
        tool: str,
        args: Any,
        plan: Any,
        *,
        timeout_ms: Optional[int] = None,
        cancel: Optional[Cancel] = None,
    ) -> Any: ...
    def call_json(
        self,
        actor: Actor,
        tool: str,
        args: Union[str, bytes],
        *,
        timeout_ms: Optional[int] = None,
        cancel: Optional[Cancel] = None,
    ) -> str: ...
    def _time_calls(self, actor: Actor, tool: str, args: Any, n: int) -> float: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def root(self) -> str: ...

def parse_patch(data: Union[str, bytes], *, strip: int = 1) -> Dict[str, Any]: ...
def apply_patch(
    root: Union[str, os.PathLike[str]], data: Union[str, bytes], *, check: bool = False, strip: int = 1
) -> List[Dict[str, Any]]: ...
def make_patch(path: str, old: Union[str, bytes, None], new: Union[str, bytes, None]) -> bytes: ...
def tools() -> List[Dict[str, Any]]: ...
def _raise_error(
    code: str, message: str, details: Optional[Dict[str, Any]] = None, errno: Optional[int] = None
) -> None: ...
