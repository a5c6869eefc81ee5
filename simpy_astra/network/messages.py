"""Matching sends with receives, as ASTRA-sim's analytical front end does.

A message is identified by (tag, src, dst, bytes) and its sequence number among messages
with the same identity: the k-th send matches the k-th receive. When a message arrives the
sender's callback runs first, then the receiver's if the receive was already posted;
otherwise the arrival is remembered and a later receive completes 0 ns after it is posted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simpy_astra.kernel import Kernel

Handler = Callable[[Any], None] | None


class _Entry:
    __slots__ = ("send_fn", "send_arg", "recv_fn", "recv_arg", "arrived")

    def __init__(self) -> None:
        self.send_fn: Handler = None
        self.send_arg: Any = None
        self.recv_fn: Handler = None
        self.recv_arg: Any = None
        self.arrived = False


class MessageBoard:
    """Pending sends and receives of every NPU of one run."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._entries: dict[tuple, _Entry] = {}
        self._sends: dict[tuple, int] = {}
        self._recvs: dict[tuple, int] = {}

    def post_send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> tuple:
        """Register a send; returns the key the backend hands back to :meth:`arrived`."""
        ident = (tag, src, dst, size)
        seq = self._sends.get(ident, 0)
        self._sends[ident] = seq + 1
        key = (tag, src, dst, size, seq)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry()
        entry.send_fn = fn
        entry.send_arg = arg
        return key

    def post_recv(self, dst: int, src: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        ident = (tag, src, dst, size)
        seq = self._recvs.get(ident, 0)
        self._recvs[ident] = seq + 1
        key = (tag, src, dst, size, seq)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry()
            entry.recv_fn = fn
            entry.recv_arg = arg
        elif entry.arrived:
            del self._entries[key]
            self.kernel.call_later(0, fn, arg)
        else:
            entry.recv_fn = fn
            entry.recv_arg = arg

    def arrived(self, key: tuple) -> None:
        """The message ``key`` reached its destination."""
        entry = self._entries[key]
        if entry.send_fn is not None:
            entry.send_fn(entry.send_arg)
        if entry.recv_fn is not None:
            del self._entries[key]
            entry.recv_fn(entry.recv_arg)
        else:
            entry.arrived = True

    def messages_sent(self) -> int:
        """How many sends were posted (the per-identity sequence counters add up to it)."""
        return sum(self._sends.values())

    def unmatched(self, describe: Callable[[Handler, Any], str | None] | None = None) -> list[str]:
        """Human-readable list of sends without receives and receives without sends.

        ``describe(handler, arg)`` may name who posted a send or receive (e.g. "NPU 0 node 3
        (COMM_SEND 'x')"); it returns None when it cannot tell. Only called after a run.
        """

        def who(fn: Handler, arg: Any) -> str | None:
            return describe(fn, arg) if describe is not None and fn is not None else None

        out = []
        for (tag, src, dst, size, _seq), e in self._entries.items():
            if e.recv_fn is None:
                sender = who(e.send_fn, e.send_arg) or f"NPU {src}"
                out.append(f"{sender} sent {size} B to NPU {dst} with tag {tag}, for which NPU {dst} "
                           f"never posted a matching receive")
            else:
                receiver = who(e.recv_fn, e.recv_arg) or f"NPU {dst}"
                out.append(f"{receiver} waits for {size} B from NPU {src} with tag {tag}, which NPU "
                           f"{src} never sent")
        return out
