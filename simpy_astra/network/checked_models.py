"""A user's link or switch model, or backend, held to the "once per item" rules of its
contract (``simpy_astra/network/README.md``, docs/backends.md), which ours keep by the
project's tests.

The checks are chosen once per class, when a network is built: :func:`checked_link_model`
and :func:`checked_switch_model` give the class itself when the user wrote none of the
methods a check guards (a built-in model, or a subclass that only changes ``hold_ns``), else
a subclass of it that puts a checking mixin in front of the user's methods. No instance
rebinds its methods, and ours are built and run as they are (no work per message).

The subclass answers to the user's class's module and name, so every error still names the
class the config named (``link model 'r12:Forgetful'``).

A backend is built by the user's own builder, so its class cannot be chosen for it: the
system layer is handed :func:`system_side`, the network itself unless its ``send`` is the
user's, else a :class:`PostsOnce` view of it (``send`` and ``recv``, as a job's view is).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from simpy.events import Event

from simpy_astra.network.link import LinkElement
from simpy_astra.network.link_resource import Transmission
from simpy_astra.network.messages import Handler
from simpy_astra.network.switch import SwitchElement
from simpy_astra.plugins import PluginError, bad_return, class_name, model_kind, users_method


class DequeuesOnce:
    """In front of a user's :meth:`~LinkElement.dequeue`: it gives each item once. One that
    looks at its head and forgets to remove it sent that item for ever (handed on at each
    arrival, the clock running on toward the horizon)."""

    _gave: Any = None  # the item the last dequeue gave

    def dequeue(self) -> Any | None:
        item = super().dequeue()
        if item is not None:
            if item is self._gave:
                raise bad_return(self, "dequeue", item, "each item once, but it gave this item before: remove "
                                 "what it gives from its queue (deque.popleft(), heapq.heappop())")
            self._gave = item
        return item

    def enqueue(self, item: Any) -> None:
        """An item the user's own ``run`` takes out and queues again (not ready yet) may come
        out of :meth:`dequeue` again."""
        if item is self._gave:
            self._gave = None
        super().enqueue(item)


class CarriesOnce:
    """In front of a user's serving loop (its own :meth:`~LinkElement.run`): each item the
    network offers is transmitted once. A second transmission (a lost attempt sent again)
    handed it on twice, the second time past its next link, so it arrived early, in silence."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._offered: set[Any] = set()  # the network's items offered and not yet carried
        super().__init__(*args, **kwargs)

    def offer(self, item: Any) -> None:
        if type(item) is not Transmission:
            self._offered.add(item)
        super().offer(item)

    def transmit(self, item: Any) -> Generator[Event, Any, None]:
        if type(item) is not Transmission:
            if item not in self._offered:
                raise PluginError(f"{model_kind(self)} '{class_name(type(self))}', method transmit() was given an "
                                  f"item it had already carried (or one never offered to this link): a transmission "
                                  f"carries the item once and hands it on at the far end; to charge a lost attempt, "
                                  f"hold the item for it (hold_ns) before its one transmission")
            self._offered.remove(item)
        yield from super().transmit(item)


class HandsOnOnce:
    """In front of a switch whose ``receive`` or ``run`` is the user's: :meth:`send_on` once
    per item. An item handed on a second time (its next link no longer leaves this switch)
    would skip a link and arrive a hop early, in silence."""

    def send_on(self, item: Any) -> None:
        next_link = getattr(item, "next_link", None)
        if next_link is None or next_link.src != self.device:
            raise PluginError(f"{model_kind(self)} '{class_name(type(self))}', method send_on() was given an item it "
                              f"had already handed on (or one that did not arrive here): hand each item on once, "
                              f"from receive() or from run(), not from both")
        super().send_on(item)


def checked_link_model(model: type[LinkElement]) -> type[LinkElement]:
    """``model``, or the subclass of it the network builds so that a user's ``dequeue`` gives
    each item once (:class:`DequeuesOnce`) and a user's ``run`` carries each once
    (:class:`CarriesOnce`)."""
    if not (isinstance(model, type) and issubclass(model, LinkElement)):
        return model  # no contract of ours to hold it to (the registry refuses one; a script may not)
    checks = [check for check, method in ((DequeuesOnce, "dequeue"), (CarriesOnce, "run"))
              if users_method(model, method)]
    return _in_front(checks, model)


def checked_switch_model(model: type[SwitchElement]) -> type[SwitchElement]:
    """``model``, or the subclass of it the network builds so that a switch whose ``receive``
    or ``run`` is the user's hands each item on once (:class:`HandsOnOnce`)."""
    if not (isinstance(model, type) and issubclass(model, SwitchElement)):
        return model
    users = users_method(model, "receive") or users_method(model, "run")
    return _in_front([HandsOnOnce] if users else [], model)


def _in_front(checks: list[type], model: type) -> type:
    """``model`` with ``checks`` before it in its MRO, named as ``model`` (its errors name the
    class the config named); ``model`` itself when there are none."""
    if not checks:
        return model
    names = {"__module__": model.__module__, "__qualname__": model.__qualname__, "__doc__": model.__doc__}
    return type(model)(model.__name__, (*checks, model), names)


class PostsOnce:
    """The system layer's view of a backend whose ``send`` is the user's: it posts no more
    messages (``board.post_send``) than it was handed. A second post of one message left a
    copy that a later receive of the same NPUs, tag and size took: a ring all-reduce ended at
    a fifth of its time, with only a warning of unmatched messages naming no backend. A post
    may come later than its ``send``: a backend may hold a message in a queue of its own and
    post it, with others, in a later call (counted in ``unposted``), or from a process of its
    own (not seen per call: a stall says how many it never posted, :meth:`never_posted`, from
    the board's count of every post). One view serves every job of a run, whose sends share
    the board."""

    __slots__ = ("network", "board", "backend", "handed", "unposted")

    def __init__(self, network: Any) -> None:
        self.network = network
        self.board = network.board
        self.backend = class_name(type(network))
        self.handed = 0  # messages handed to send()
        self.unposted = 0  # messages handed to send() that no call has posted yet

    def send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        before = self.board.messages_sent()
        self.handed += 1
        self.network.send(src, dst, tag, size, fn, arg)
        posted = self.board.messages_sent() - before
        self.unposted += 1 - posted
        if self.unposted < 0:
            raise PluginError(f"network backend '{self.backend}', send(): posted the message of "
                              f"{size} B from NPU {src} to NPU {dst} (tag {tag}) {posted} times, and a later "
                              f"receive takes each copy: call self.board.post_send once per send and give that "
                              f"entry its arrival")

    def never_posted(self) -> str | None:
        """Why a stalled run's sends may never have reached the board: the backend was handed
        more sends than the board was given, in calls or from its own process (its ``send``
        dropped some), in words; else None. A receive that waits on such a send is otherwise
        said to wait on one 'never sent'."""
        posted = self.board.messages_sent()
        if self.handed <= posted:
            return None
        return (f"network backend '{self.backend}' was handed {self.handed:,} sends and posted "
                f"{posted:,} of them: its send() must post each message with self.board.post_send "
                f"(now, or later from a queue of its own), or its receive waits for ever")

    def recv(self, dst: int, src: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        self.network.recv(dst, src, tag, size, fn, arg)


def system_side(network: Any) -> Any:
    """What the system layer sends through: ``network`` itself (ours: no work per message),
    or a :class:`PostsOnce` view of it when its ``send`` is the user's."""
    return PostsOnce(network) if users_method(type(network), "send") else network


def never_posted(side: Any) -> str | None:
    """:meth:`PostsOnce.never_posted` of what :func:`system_side` gave, None for our networks
    (each posts every send in its call)."""
    return side.never_posted() if isinstance(side, PostsOnce) else None
