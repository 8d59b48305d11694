"""The exception hierarchy: one class per stable error code, grouped in families.

Every exception roundtable raises for a refused or failed call is a
:class:`RoundtableError` carrying ``.code`` (the stable snake_case code, the
same string as the Rust ``ErrorCode::as_str`` and the C status names),
``.message`` and ``.details`` (a dict, the same structured details every
front end reports).

Families group related codes so a caller can catch broadly or narrowly::

    RoundtableError
    ├── InvalidArgument (also ValueError)      invalid_argument
    ├── NotFound (also LookupError)            not_found
    ├── Forbidden                              forbidden
    ├── Conflict                               conflict
    ├── IllegalTransition                      illegal_transition
    ├── IdempotencyConflict                    idempotency_conflict
    ├── PreconditionFailed                     precondition_failed
    ├── StaleClaim                             stale_claim
    ├── ValidationFailed (.report)             validation_failed
    ├── Busy                                   busy
    ├── Cancelled                              cancelled
    ├── DeadlineExceeded (also TimeoutError)   deadline_exceeded
    ├── InheritedEngine                        inherited_engine
    ├── PatchError
    │   ├── InvalidPatch                       invalid_patch
    │   ├── PatchDoesNotApply                  patch_does_not_apply
    │   ├── UnsupportedPatch                   unsupported_patch
    │   └── IrreversiblePatch                  irreversible_patch
    ├── PathError
    │   ├── PathEscape                         path_escape
    │   ├── InvalidPath                        invalid_path
    │   └── SpecialFile                        special_file
    ├── EditPlanError
    │   ├── InvalidEditPlan                    invalid_edit_plan
    │   └── IncompleteEditPlan                 incomplete_edit_plan
    ├── SymbolError
    │   ├── UnknownSymbol                      unknown_symbol
    │   ├── AmbiguousSymbol                    ambiguous_symbol
    │   └── UnsupportedLanguage                unsupported_language
    ├── InvalidPolicy                          invalid_policy
    ├── StoreError
    │   ├── DatabaseError                      database
    │   └── IncompatibleStore                  incompatible_store
    └── RoundtableOSError (also OSError)       io

``io`` errors are :class:`OSError` too: when the operating system's cause
is known, the exception is also the builtin subclass Python itself would
raise for that errno (``FileNotFoundError``, ``PermissionError``,
``FileExistsError``, ``IsADirectoryError``, ``NotADirectoryError``,
``InterruptedError``, ``TimeoutError``), with ``.errno``, ``.strerror`` and
``.filename`` set. So ``except FileNotFoundError`` and
``except roundtable.RoundtableError`` both catch it.
"""

from __future__ import annotations

import errno as _errno
from typing import Any, ClassVar, Dict, Optional, Tuple, Type

__all__ = [
    "RoundtableError",
    "InvalidArgument",
    "NotFound",
    "Forbidden",
    "Conflict",
    "IllegalTransition",
    "IdempotencyConflict",
    "PreconditionFailed",
    "StaleClaim",
    "ValidationFailed",
    "Busy",
    "Cancelled",
    "DeadlineExceeded",
    "InheritedEngine",
    "PatchError",
    "InvalidPatch",
    "PatchDoesNotApply",
    "UnsupportedPatch",
    "IrreversiblePatch",
    "PathError",
    "PathEscape",
    "InvalidPath",
    "SpecialFile",
    "EditPlanError",
    "InvalidEditPlan",
    "IncompleteEditPlan",
    "SymbolError",
    "UnknownSymbol",
    "AmbiguousSymbol",
    "UnsupportedLanguage",
    "InvalidPolicy",
    "StoreError",
    "DatabaseError",
    "IncompatibleStore",
    "RoundtableOSError",
    "RoundtableFileNotFoundError",
    "RoundtableFileExistsError",
    "RoundtablePermissionError",
    "RoundtableIsADirectoryError",
    "RoundtableNotADirectoryError",
    "RoundtableInterruptedError",
    "RoundtableTimeoutError",
    "error_class",
]


class RoundtableError(Exception):
    """A refused or failed roundtable call.

    Attributes:
        code: the stable error code (``"not_found"``, ``"conflict"``…).
        message: the message for people (also ``str(exc)``).
        details: structured details for programs (always a dict).
    """

    #: The codes this class stands for (its own and its subclasses').
    codes: ClassVar[Tuple[str, ...]] = ()
    code: str
    message: str
    details: Dict[str, Any]

    def __init__(self, message: str, code: Optional[str] = None, details: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code if code is not None else (self.codes[0] if self.codes else "")
        self.details = dict(details) if details is not None else {}

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r}, details={self.details!r})"


class InvalidArgument(RoundtableError, ValueError):
    """``invalid_argument``: a field is missing, of the wrong type, blank, out of
    range or unknown. ``details["field"]`` names it (``affected_resources[2]``)."""

    codes = ("invalid_argument",)


class NotFound(RoundtableError, LookupError):
    """``not_found``: the named proposal, revision, task, agent, tool… does not
    exist (``details["kind"]``, ``details["id"]``)."""

    codes = ("not_found",)


class Forbidden(RoundtableError):
    """``forbidden``: the actor may not do this (wrong kind, not the author, the
    author voting on their own proposal, an unregistered or disabled agent)."""

    codes = ("forbidden",)


class Conflict(RoundtableError):
    """``conflict``: the call lost a race or repeats a record (an overlapping
    claim, a taken id, an expected revision that is not the latest, a
    superseded revision: ``details["latest_revision"]`` names the latest)."""

    codes = ("conflict",)


class IllegalTransition(RoundtableError):
    """``illegal_transition``: the proposal's status does not allow this."""

    codes = ("illegal_transition",)


class IdempotencyConflict(RoundtableError):
    """``idempotency_conflict``: an idempotency key was used before with other
    arguments or another tool."""

    codes = ("idempotency_conflict",)


class PreconditionFailed(RoundtableError):
    """``precondition_failed``: a file's current digest is not the expected one
    (the workspace moved under a proposal)."""

    codes = ("precondition_failed",)


class StaleClaim(RoundtableError):
    """``stale_claim``: a claim's resource changed since it was acquired, or its
    fencing token was superseded."""

    codes = ("stale_claim",)


class ValidationFailed(RoundtableError):
    """``validation_failed``: a gate of the validation report fails.

    ``.report`` is the whole validation report (a dict, as ``patch.validate``
    returns it)."""

    codes = ("validation_failed",)

    @property
    def report(self) -> Dict[str, Any]:
        """The full validation report."""
        report = self.details.get("report")
        return report if isinstance(report, dict) else {}


class Busy(RoundtableError):
    """``busy``: another applier holds the workspace's apply lock past the
    wait; nothing changed and the call may be retried soon."""

    codes = ("busy",)


class Cancelled(RoundtableError):
    """``cancelled``: the call's cancel handle was cancelled while it waited,
    before its commit point; nothing changed."""

    codes = ("cancelled",)


class DeadlineExceeded(RoundtableError, TimeoutError):
    """``deadline_exceeded``: the call's deadline passed while it waited,
    before its commit point; nothing changed."""

    codes = ("deadline_exceeded",)


class InheritedEngine(RoundtableError):
    """``inherited_engine``: the engine was opened by another process and this
    one inherited it across ``fork()`` (``os.fork``, ``multiprocessing`` with
    the ``fork`` start method); the call did nothing. Open a new engine in the
    child process (``details``: ``opened_by_pid``, ``pid``)."""

    codes = ("inherited_engine",)


class PatchError(RoundtableError):
    """A patch is malformed, unsupported, irreversible or does not apply."""

    codes: ClassVar[Tuple[str, ...]] = ("invalid_patch", "patch_does_not_apply", "unsupported_patch", "irreversible_patch")


class InvalidPatch(PatchError):
    """``invalid_patch``: the text is not a unified/git diff (``details["line"]``,
    ``"expected"``, ``"found"``)."""

    codes = ("invalid_patch",)


class PatchDoesNotApply(PatchError):
    """``patch_does_not_apply``: a hunk's context is not found, a file to create
    exists, a file to modify is missing… (``details["path"]``)."""

    codes = ("patch_does_not_apply",)


class UnsupportedPatch(PatchError):
    """``unsupported_patch``: submodules (gitlinks), combined diffs."""

    codes = ("unsupported_patch",)


class IrreversiblePatch(PatchError):
    """``irreversible_patch``: the patch has no inverse (a copy)."""

    codes = ("irreversible_patch",)


class PathError(RoundtableError):
    """A path is not a valid, contained repository path."""

    codes: ClassVar[Tuple[str, ...]] = ("path_escape", "invalid_path", "special_file")


class PathEscape(PathError):
    """``path_escape``: the path leaves the root or names ``.git``/``.roundtable``."""

    codes = ("path_escape",)


class InvalidPath(PathError):
    """``invalid_path``: empty, not UTF-8, a NUL byte…"""

    codes = ("invalid_path",)


class SpecialFile(PathError):
    """``special_file``: the path names a FIFO, socket or device, which
    roundtable never opens (``details`` name the path and its type)."""

    codes = ("special_file",)


class EditPlanError(RoundtableError):
    """An edit plan is malformed or not complete."""

    codes: ClassVar[Tuple[str, ...]] = ("invalid_edit_plan", "incomplete_edit_plan")


class InvalidEditPlan(EditPlanError):
    """``invalid_edit_plan``: bad shape, overlapping edits, bad ranges…"""

    codes = ("invalid_edit_plan",)


class IncompleteEditPlan(EditPlanError):
    """``incomplete_edit_plan``: the plan's status is not ``complete``."""

    codes = ("incomplete_edit_plan",)


class SymbolError(RoundtableError):
    """A ``symbol:`` resource cannot be resolved."""

    codes: ClassVar[Tuple[str, ...]] = ("unknown_symbol", "ambiguous_symbol", "unsupported_language")


class UnknownSymbol(SymbolError):
    """``unknown_symbol``: no such symbol in the file's current content."""

    codes = ("unknown_symbol",)


class AmbiguousSymbol(SymbolError):
    """``ambiguous_symbol``: more than one symbol matches (``details`` lists them)."""

    codes = ("ambiguous_symbol",)


class UnsupportedLanguage(SymbolError):
    """``unsupported_language``: roundtable cannot index this file's language."""

    codes = ("unsupported_language",)


class InvalidPolicy(RoundtableError):
    """``invalid_policy``: a policy document is malformed (``details`` name the place)."""

    codes = ("invalid_policy",)


class StoreError(RoundtableError):
    """The store cannot be used."""

    codes: ClassVar[Tuple[str, ...]] = ("database", "incompatible_store")


class DatabaseError(StoreError):
    """``database``: the store's database failed (locked past the busy timeout,
    corrupt, disk full); the call changed nothing."""

    codes = ("database",)


class IncompatibleStore(StoreError):
    """``incompatible_store``: the store was written by a newer roundtable."""

    codes = ("incompatible_store",)


class RoundtableOSError(RoundtableError, OSError):
    """``io``: the operating system refused a read or write.

    Also an :class:`OSError` with ``errno``, ``strerror`` and ``filename``
    (``details["path"]`` when the core names one) set when the cause is known.
    """

    codes = ("io",)

    def __init__(
        self,
        message: str,
        code: Optional[str] = None,
        details: Optional[Dict[str, Any]] = None,
        errno: Optional[int] = None,
    ) -> None:
        details = dict(details) if details is not None else {}
        path = details.get("path")
        if errno is not None:
            OSError.__init__(self, errno, message, path) if isinstance(path, str) else OSError.__init__(
                self, errno, message
            )
        else:
            OSError.__init__(self, message)
        self.message = message
        self.code = code if code is not None else "io"
        self.details = details

    def __str__(self) -> str:
        return self.message


class RoundtableFileNotFoundError(RoundtableOSError, FileNotFoundError):
    """``io`` caused by ENOENT."""


class RoundtableFileExistsError(RoundtableOSError, FileExistsError):
    """``io`` caused by EEXIST."""


class RoundtablePermissionError(RoundtableOSError, PermissionError):
    """``io`` caused by EACCES or EPERM."""


class RoundtableIsADirectoryError(RoundtableOSError, IsADirectoryError):
    """``io`` caused by EISDIR."""


class RoundtableNotADirectoryError(RoundtableOSError, NotADirectoryError):
    """``io`` caused by ENOTDIR."""


class RoundtableInterruptedError(RoundtableOSError, InterruptedError):
    """``io`` caused by EINTR."""


class RoundtableTimeoutError(RoundtableOSError, TimeoutError):
    """``io`` caused by ETIMEDOUT."""


_BY_ERRNO: Dict[int, Type[RoundtableOSError]] = {
    _errno.ENOENT: RoundtableFileNotFoundError,
    _errno.EEXIST: RoundtableFileExistsError,
    _errno.EACCES: RoundtablePermissionError,
    _errno.EPERM: RoundtablePermissionError,
    _errno.EISDIR: RoundtableIsADirectoryError,
    _errno.ENOTDIR: RoundtableNotADirectoryError,
    _errno.EINTR: RoundtableInterruptedError,
    _errno.ETIMEDOUT: RoundtableTimeoutError,
}

# Rust's io::ErrorKind names, for a cause that carries no OS errno.
_BY_KIND: Dict[str, int] = {
    "NotFound": _errno.ENOENT,
    "AlreadyExists": _errno.EEXIST,
    "PermissionDenied": _errno.EACCES,
    "IsADirectory": _errno.EISDIR,
    "NotADirectory": _errno.ENOTDIR,
    "Interrupted": _errno.EINTR,
    "TimedOut": _errno.ETIMEDOUT,
}

_BY_CODE: Dict[str, Type[RoundtableError]] = {}
_cls: Type[RoundtableError]
for _cls in (
    InvalidArgument,
    NotFound,
    Forbidden,
    Conflict,
    IllegalTransition,
    IdempotencyConflict,
    PreconditionFailed,
    StaleClaim,
    ValidationFailed,
    Busy,
    Cancelled,
    DeadlineExceeded,
    InheritedEngine,
    InvalidPatch,
    PatchDoesNotApply,
    UnsupportedPatch,
    IrreversiblePatch,
    PathEscape,
    InvalidPath,
    SpecialFile,
    InvalidEditPlan,
    IncompleteEditPlan,
    UnknownSymbol,
    AmbiguousSymbol,
    UnsupportedLanguage,
    InvalidPolicy,
    DatabaseError,
    IncompatibleStore,
    RoundtableOSError,
):
    (_code,) = _cls.codes
    _BY_CODE[_code] = _cls
for _cls in (RoundtableError, PatchError, PathError, EditPlanError, SymbolError, StoreError, RoundtableOSError):
    _cls.__module__ = "roundtable"
for _cls in _BY_CODE.values():
    _cls.__module__ = "roundtable"
for _cls in _BY_ERRNO.values():
    _cls.__module__ = "roundtable"


def error_class(code: str) -> Type[RoundtableError]:
    """The class raised for ``code`` (:class:`RoundtableError` itself for a code
    this version does not know: new codes are only ever added)."""
    return _BY_CODE.get(code, RoundtableError)


def _from_core(
    code: str,
    message: str,
    details: Dict[str, Any],
    errno: Optional[int],
    kind: Optional[str],
) -> RoundtableError:
    """Build the exception for a core error (called by the extension)."""
    if code == "io":
        if errno is None and kind is not None:
            errno = _BY_KIND.get(kind)
        cls = _BY_ERRNO.get(errno, RoundtableOSError) if errno is not None else RoundtableOSError
        return cls(message, code, details, errno)
    return error_class(code)(message, code, details)
