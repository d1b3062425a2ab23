"""The gate every call into a C handle passes, and the owner of one handle.

Queries share a handle's gate, so any number of threads may query one
object at once (ctypes releases the GIL during each call); a change runs
alone; ``close()`` may come from any thread at any time: calls that start
afterwards raise ValueError, and the handle is freed once the calls already
inside the library have returned, never under one.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
import weakref
from ctypes import byref, c_void_p
from typing import Any, Callable, Dict, List, NoReturn, Optional, Tuple

from . import _lib
from ._enums import Status
from ._errors import make_error


class _Gate:
    """Who is inside one C handle. Queries share it; a change (Deployment's
    set and apply_args, giving a model to a deployment, setting a setting)
    has it alone; close
    shuts it: calls that start afterwards raise ValueError, and close waits
    for the ones already inside, so the C object is freed only when no call
    is in it. A change waiting for its turn holds off new queries, so it
    is not starved; nothing in the binding enters a gate it already holds.
    A settings object's gate is always the last one a call enters (a plan
    made from a model and Options passes the model's, then the settings'),
    and a change of settings holds no other gate, so no two calls wait on
    each other.

    A query that finds the gate open takes one lock twice and nothing else;
    the condition to sleep on is made when a thread first has to wait.
    """

    __slots__ = ("_lock", "_cond", "_readers", "_writing", "_waiting", "_sleepers", "closed")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cond: Optional[threading.Condition] = None
        self._readers = 0
        self._writing = False
        self._waiting = 0  # changes waiting for their turn
        self._sleepers = 0  # threads asleep on _cond
        self.closed = False

    def _sleep(self) -> None:
        # With _lock held.
        if self._cond is None:
            self._cond = threading.Condition(self._lock)
        self._sleepers += 1
        try:
            self._cond.wait()
        finally:
            self._sleepers -= 1

    def _wake(self) -> None:
        # With _lock held.
        if self._sleepers:
            assert self._cond is not None
            self._cond.notify_all()

    def enter(self, exclusive: bool, kind: str) -> None:
        with self._lock:
            if exclusive:
                self._waiting += 1
                try:
                    while not self.closed and (self._writing or self._readers):
                        self._sleep()
                finally:
                    self._waiting -= 1
                    if not self._waiting:
                        self._wake()  # queries held off for this change
            else:
                while not self.closed and (self._writing or self._waiting):
                    self._sleep()
            if self.closed:
                raise ValueError(f"this kvshard {kind} is closed")
            if exclusive:
                self._writing = True
            else:
                self._readers += 1

    def leave(self, exclusive: bool) -> None:
        with self._lock:
            if exclusive:
                self._writing = False
            else:
                self._readers -= 1
            if not self._readers:
                self._wake()

    def shut(self) -> None:
        """Refuse new calls, then wait until none is inside."""
        with self._lock:
            self.closed = True
            self._wake()  # waiting calls raise instead of entering
            while self._readers or self._writing:
                self._sleep()

    def retire(self) -> None:
        """Mark the handle closed from inside an exclusive use, whose end
        leaves it empty (a model given to a deployment)."""
        with self._lock:
            self.closed = True


class _Inside:
    """One call's passage through a handle's gate (``with handle._use()``):
    the C pointer inside the block, ValueError when the object is closed. A
    borrowed object passes its owner's gate, whose C object holds it."""

    __slots__ = ("_gate", "_owner", "_exclusive", "_handle")

    def __init__(self, handle: "_Handle", exclusive: bool) -> None:
        self._handle = handle
        self._exclusive = exclusive
        owner = handle._parent
        self._gate = handle._gate if owner is None else owner._gate
        self._owner = owner

    def __enter__(self) -> int:
        handle = self._handle
        if self._owner is not None and handle._gate.closed:
            raise ValueError(f"this kvshard {handle._kind} is closed")
        self._gate.enter(self._exclusive, handle._kind)
        return handle._ptr

    def __exit__(self, *exc: Any) -> None:
        self._gate.leave(self._exclusive)


_Then = Optional[Tuple[Callable[[int], None], int]]


def _free_when_idle(gate: _Gate, free: Callable[[int], None], ptr: int, then: _Then) -> None:
    # The finalizer: run by close(), or by the garbage collector, when no
    # call can be inside (a call holds a reference to its object).
    gate.shut()
    free(ptr)
    if then is not None:
        then[0](then[1])


class _Handle:
    """Owns one C handle (or borrows one from a parent that owns it) and the
    gate every call into it passes."""

    _free_name = ""
    _kind = "object"

    def __init__(
        self, ptr: int, parent: Optional["_Handle"] = None, then: _Then = None
    ) -> None:
        # `then`: (free, pointer) of a C object the handle owns beside its
        # own, freed right after it, and reached only through its gate.
        self._ptr = ptr
        self._parent = parent
        self._gate = _Gate()
        if parent is None:
            free = getattr(_lib.library(), self._free_name)
            try:
                finalizer = weakref.finalize(self, _free_when_idle, self._gate, free, ptr, then)
            except BaseException:  # not even a finalizer: free it now
                free(ptr)
                if then is not None:
                    then[0](then[1])
                raise
            # At interpreter exit a daemon thread may still be inside the
            # handle; the process's end frees it, never while in use.
            finalizer.atexit = False
            self._finalizer: Optional[weakref.finalize] = finalizer
        else:
            self._finalizer = None

    def _use(self, exclusive: bool = False) -> _Inside:
        """``with self._use() as h:`` -- `h` is the C pointer for calls made
        inside the block; ValueError when the object is closed."""
        return _Inside(self, exclusive)

    @property
    def closed(self) -> bool:
        """Whether the handle was released (or its owner was)."""
        return self._gate.closed or (self._parent is not None and self._parent._gate.closed)

    def close(self) -> None:
        """Release the C handle. Idempotent and safe from any thread: calls
        that start afterwards raise ValueError, and close returns once the
        calls already inside the library have returned and the handle is
        freed. A borrowed object (the model of a deployment) only stops
        answering; its owner frees it."""
        if self._parent is not None:
            self._gate.retire()
            return
        self._gate.shut()
        if self._finalizer is not None:
            self._finalizer()

    def _query(self, function: str, *args: Any) -> Any:
        """The library's `function(handle, *args)`, called inside the gate."""
        with self._use() as h:
            return getattr(_lib.library(), function)(h, *args)

    def __enter__(self):  # type: ignore[no-untyped-def]
        if self.closed:
            raise ValueError(f"this kvshard {self._kind} is closed")
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _new_handle(create: Callable[..., int], *args: Any) -> Tuple[int, int, _lib.CError]:
    """Call a constructor `create(&out, *args, &err)`. Returns (rc, out, err)."""
    out = c_void_p()
    err = _lib.CError()
    rc = create(byref(out), *args, byref(err))
    return rc, out.value or 0, err




def encode(value: str, name: str) -> bytes:
    """UTF-8 bytes of a str passed as a C string; ValueError on a NUL."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    data = value.encode("utf-8")
    if b"\0" in data:
        raise ValueError(f"{name} must not contain a NUL character")
    return data


def raise_error(rc: int, err: Optional[_lib.CError]) -> NoReturn:
    """Raise the exception of a failed call from its kvshard_error."""
    if err is not None and err.code != 0:
        raise make_error(
            err.code,
            err.message.decode("utf-8", "replace"),
            err.source.decode("utf-8", "replace"),
            err.line,
            err.column,
            err.offset,
        )
    raise make_error(rc)


def copy_rows(ptr: int, count: Callable[[int], int], row_at: Callable[[int, int], Any],
              convert: Callable[[Any], Any], what: str) -> Tuple[Any, ...]:
    """The rows a handle holds, each converted into a Python copy: row
    `index` from ``row_at(ptr, index)`` for every index below ``count(ptr)``.
    A NULL row is an EINVAL naming `what`."""
    rows = []
    for index in range(count(ptr)):
        row = row_at(ptr, index)
        if not row:
            raise make_error(Status.EINVAL, f"{what} row {index} is missing")
        rows.append(convert(row.contents))
    return tuple(rows)


# Output: one module-level writer callback; `user` is the key of the list
# that collects one call's output.
_sinks: Dict[int, List[Any]] = {}
_sink_keys = itertools.count(1)


def _sink(user: Optional[int], data: Optional[int], length: int) -> int:
    try:
        chunks = _sinks[user or 0]
        if length:
            chunks.append(ctypes.string_at(data, length))
        return 0
    except BaseException:  # never let an exception cross the C frames
        return 1


_SINK = _lib.WRITE_FN(_sink)


def _write(function: str, *handles: Optional[int]) -> str:
    key = next(_sink_keys)
    _sinks[key] = chunks = []
    try:
        rc = getattr(_lib.library(), function)(*handles, _SINK, c_void_p(key))
    finally:
        del _sinks[key]
    if rc != 0:
        raise_error(rc, None)
    return b"".join(chunks).decode("utf-8")
