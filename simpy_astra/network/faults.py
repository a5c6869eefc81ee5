"""Faults a co-simulation may inject, and the answers a backend without links gives."""

from __future__ import annotations

from typing import Any

import simpy

from simpy_astra.network.registered_name import RegisteredName


def no_links(backend: str) -> AttributeError:
    """What ``network.link(u, v)`` says on a backend without links (one line)."""
    return AttributeError(f"the {backend} backend has no links (its delays are closed forms); links exist in "
                          f"the congestion_aware and packet backends (backend: congestion_aware in the "
                          f"scenario, --network-backend congestion_aware on the command line)")


def fail_device(network: Any, device: Any) -> None:
    """Fail switch (or NPU) ``device`` for good, now (``network.fail_device``): every link
    into or out of it goes down and stays down, so what crosses it can never be delivered
    (the run then ends in a stall report naming the links, ``which is failed``)."""
    network.fail_device(device)


class WithoutLinks(RegisteredName):
    """The :class:`~simpy_astra.network.Network` members a backend without links answers
    with "not here", each in one line (its delays are closed forms)."""

    name: str
    has_links = False
    has_faults = False
    has_priorities = False

    def links(self) -> list:
        """No links."""
        return []

    def link(self, u: Any, v: Any) -> Any:
        """No links: says which backends have them."""
        raise no_links(self.name)

    def link_stats(self) -> None:
        """No links: delays are closed forms."""
        return None

    def send_background(self, src: int, dst: int, size_bytes: int, priority: int = 0) -> simpy.Event:
        """No links to share: says which backends have them."""
        raise no_links(self.name)

    def fail_device(self, device: Any) -> None:
        """No links or devices to fail: says which backends have them."""
        raise no_links(self.name)
