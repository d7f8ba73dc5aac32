"""icechunk sessions as zarrdask stores, and the fork protocol for writes in other processes.

An icechunk ``Session`` (``repo.writable_session(branch)``,
``repo.readonly_session(...)``, ``session.fork()``) exposes a zarr-python 3
store, ``session.store`` (an ``icechunk.IcechunkStore``). :class:`IcechunkSessionStore`
reads and writes through that store (it is a
:class:`~zarrdask.storage.zarr_python.ZarrPythonStore`) and keeps the session
itself, so that both ``session`` and ``session.store`` are accepted wherever a
store is (:func:`~zarrdask.storage.store_from`), and so that the store pickles
as icechunk allows (icechunk 1.1 documentation, "Parallel Writes",
https://icechunk.io/en/stable/icechunk-python/parallel/):

* a **read-only** session pickles: a dask graph reading one runs on any
  worker of a ``distributed`` cluster;
* a **fork** (``ForkSession``, from ``Session.fork()``) pickles: every copy
  is an independent session carrying the fork's changes, and the copies are
  merged back with ``Session.merge`` / ``ForkSession.merge``;
* a **writable session** does not leave its process: pickling this store then
  raises :class:`~zarrdask.errors.IcechunkSessionError`.

Writes in other processes (``zarrdask.dask.sessions``) follow icechunk's
recipe: fork the session before the tasks run (icechunk 1.x's
``Session.fork`` refuses a session with uncommitted changes; 2.x forks it),
write the metadata through that fork, let each task write through its own copy of the fork and return the copy,
and merge the returned copies into the session; the user commits.
:class:`PendingMerge` is the value such a write computes to: it merges its
fork into the session in the process that holds the session, when the value
reaches that process (see its documentation).

icechunk is not a dependency of zarrdask: it is imported by no module, and
an object is recognised as an icechunk session or store only when icechunk is
already loaded.
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
import uuid
from collections.abc import Hashable
from typing import Any

from ..errors import IcechunkSessionError
from .zarr_python import ZarrPythonStore

__all__ = [
    "IcechunkSessionStore",
    "PendingMerge",
    "is_icechunk_session",
    "is_icechunk_store",
    "session_of",
]


def _loaded(module: str, name: str) -> type | None:
    found = sys.modules.get(module)
    return getattr(found, name, None) if found is not None else None


def is_icechunk_session(x: Any) -> bool:
    """Whether ``x`` is an icechunk ``Session`` (or ``ForkSession``)."""
    cls = _loaded("icechunk.session", "Session")
    return cls is not None and isinstance(x, cls)


def is_icechunk_store(x: Any) -> bool:
    """Whether ``x`` is an ``icechunk.IcechunkStore`` (a session's ``store``)."""
    cls = _loaded("icechunk.store", "IcechunkStore")
    return cls is not None and isinstance(x, cls)


def _is_fork(session: Any) -> bool:
    cls = _loaded("icechunk.session", "ForkSession")
    return cls is not None and isinstance(session, cls)


def session_of(x: Any) -> tuple[Any, bool] | None:
    """The session behind ``x`` (a ``Session`` or an ``IcechunkStore``) and
    whether ``x`` itself is read-only; ``None`` for anything else."""
    if is_icechunk_session(x):
        return x, bool(x.read_only)
    if is_icechunk_store(x):
        return x.session, bool(x.read_only)
    return None


def _describe(session: Any) -> str:
    kind = "fork of a session" if _is_fork(session) else "read-only session" if session.read_only else "session"
    branch = f" on branch {session.branch!r}" if session.branch else ""
    return f"icechunk {kind}{branch} at snapshot {session.snapshot_id!r}"


class IcechunkSessionStore(ZarrPythonStore):
    """A zarrdask store over an icechunk session (see the module documentation).

    Parameters
    ----------
    session : icechunk.Session or icechunk.ForkSession
        The session to read and write through (``session.store``).
    read_only : bool
        Refuse writes even if the session is writable.
    concurrency : int, optional
        As for :class:`~zarrdask.storage.zarr_python.ZarrPythonStore`.
    """

    def __init__(self, session: Any, *, read_only: bool = False, concurrency: int | None = None) -> None:
        if not is_icechunk_session(session):
            raise TypeError(
                f"IcechunkSessionStore takes an icechunk Session, found {type(session).__module__}."
                f"{type(session).__qualname__}"
            )
        self.session = session
        super().__init__(session.store, read_only=read_only, concurrency=concurrency)

    @classmethod
    def over(cls, x: Any, *, read_only: bool) -> IcechunkSessionStore:
        """The store over a ``Session`` or an ``IcechunkStore`` (read-only if
        ``read_only`` or if the icechunk store is)."""
        found = session_of(x)
        if found is None:
            raise TypeError(f"expected an icechunk Session or IcechunkStore, found {type(x).__qualname__}")
        session, store_read_only = found
        return cls(session, read_only=read_only or store_read_only)

    # -- what the session is ------------------------------------------------
    @property
    def is_fork(self) -> bool:
        """Whether the session is a ``ForkSession`` (made by ``Session.fork()``)."""
        return _is_fork(self.session)

    def __repr__(self) -> str:
        ro = ", read_only=True" if not self.writable and not self.session.read_only else ""
        return f"IcechunkSessionStore(<{_describe(self.session)}>{ro})"

    @property
    def location(self) -> Hashable:
        # a read-only session is its snapshot; a writable one is this session object
        if self.session.read_only:
            return ("icechunk", "snapshot", self.session.snapshot_id)
        return ("icechunk", "session", id(self.session))

    def __reduce__(self) -> tuple:
        if not self.session.read_only and not self.is_fork:
            raise IcechunkSessionError(
                f"{self!r} cannot be sent to another process: icechunk pickles read-only sessions and "
                "forks only. zarrdask forks the session itself for a write planned for a distributed or "
                "processes scheduler (the scheduler in use when the write is made, or scheduler= in its "
                "keywords); it wrote straight through this session, which icechunk could not fork: "
                "commit first, or compute on the threaded scheduler (scheduler='threads'). To read on "
                "workers, open a read-only session (repo.readonly_session(...))"
            )
        return (_rebuild, (self.session, not self.writable, self.concurrency))

    def with_read_only(self) -> IcechunkSessionStore:
        if not self.writable:
            return self
        return IcechunkSessionStore(self.session, read_only=True, concurrency=self.concurrency)

    # -- the fork protocol --------------------------------------------------
    def fork_for_tasks(self) -> IcechunkSessionStore:
        """The fork whose copies the tasks of a write use: a new fork of a
        session, or this store itself when its session is a fork.

        Raises
        ------
        IcechunkSessionError
            The session is read-only, or icechunk refuses to fork it (icechunk
            1.x refuses a session with uncommitted changes).
        """
        if not self.writable:
            raise IcechunkSessionError(f"{self!r} is read-only: there is nothing to fork for a write")
        if self.is_fork:
            return self
        try:
            fork = self.session.fork()
        except ValueError as e:
            raise IcechunkSessionError(
                f"icechunk cannot fork {self!r} ({e}), and a write whose tasks run in other processes "
                "(a distributed cluster, the processes scheduler) needs a fork for them: commit first "
                "(session.commit(...), then a new writable session), or write on the threaded scheduler "
                "(scheduler='threads'), which writes through the session itself"
            ) from e
        return IcechunkSessionStore(fork, concurrency=self.concurrency)

    def copy(self) -> IcechunkSessionStore:
        """An independent copy of this fork (icechunk's own pickling of a
        ``ForkSession``): writes through the copy change neither this store
        nor other copies until merged."""
        if not self.is_fork:
            raise IcechunkSessionError(f"{self!r} is not a fork: only forks are copied for tasks")
        return IcechunkSessionStore(pickle.loads(pickle.dumps(self.session)), concurrency=self.concurrency)

    def merge(self, *forks: Any) -> None:
        """Merge forks (``ForkSession`` objects) into this store's session."""
        if forks:
            self.session.merge(*forks)

    def changed_chunks(self, array_path: str) -> list[tuple[int, ...]]:
        """Coordinates of the stored objects (chunks, or shards) of the array at
        ``array_path`` that the session has changed and not committed."""
        if not self.session.has_uncommitted_changes:
            return []
        updated = self.session.status().updated_chunks
        return [tuple(int(c) for c in coords) for coords in updated.get("/" + array_path.strip("/"), [])]

    def expect_merge(self) -> str:
        """Register this store's session to receive a :class:`PendingMerge`;
        returns the token that names it."""
        token = uuid.uuid4().hex
        with _PENDING_LOCK:
            _PENDING[token] = (os.getpid(), self)
        return token


def _rebuild(session: Any, read_only: bool, concurrency: int | None) -> IcechunkSessionStore:
    return IcechunkSessionStore(session, read_only=read_only, concurrency=concurrency)


#: sessions waiting for the fork of a write: token -> (the process holding it, its store)
_PENDING: dict[str, tuple[int, IcechunkSessionStore]] = {}
_PENDING_LOCK = threading.Lock()


class PendingMerge:
    """What a write through forks computes to: the merged fork of its tasks,
    on its way to the session (``token`` names it, :meth:`IcechunkSessionStore.expect_merge`).

    The fork is merged into the session, once, in the process that holds the
    session: when the object is made there (the threaded and synchronous
    schedulers run the last task in the caller's process) or when it is
    unpickled there (a ``distributed`` cluster or the processes scheduler
    sends the computed value back: ``dask.compute``, ``.compute()``,
    ``client.compute(...).result()``). Anywhere else it is inert. The value
    stays small: the fork carries the references to the chunks written, not
    their bytes (icechunk keeps chunks under its inline threshold in the
    reference itself).
    """

    def __init__(self, token: str, fork: Any) -> None:
        self.token = token
        self.fork = fork
        self.merged = False
        self.deliver()

    def deliver(self) -> bool:
        """Merge the fork into the session if this process holds the session and
        nothing was merged for the token yet; whether this call merged it."""
        with _PENDING_LOCK:
            found = _PENDING.get(self.token)
            if found is None or found[0] != os.getpid():
                return False
            del _PENDING[self.token]
        if self.fork is not None:
            found[1].merge(self.fork)
        self.merged = True
        return True

    def __reduce__(self) -> tuple:
        return (PendingMerge, (self.token, self.fork))

    def __repr__(self) -> str:
        state = "merged" if self.merged else "not merged in this process"
        return f"PendingMerge({self.token!r}, {state})"
