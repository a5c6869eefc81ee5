"""Faults a co-simulation may inject, and the answer a backend without links gives."""

from __future__ import annotations

from typing import Any


def no_links(backend: str) -> AttributeError:
    """What ``network.link(u, v)`` says on a backend without links (one line)."""
    return AttributeError(f"the {backend} backend has no links (its delays are closed forms); links exist in "
                          f"the congestion_aware and packet backends (backend: congestion_aware in the "
                          f"scenario, --network-backend congestion_aware on the command line)")


def fail_device(network: Any, device: Any) -> None:
    """Fail switch (or NPU) ``device`` for good, now: every link into or out of it goes down
    and stays down, so what crosses it can never be delivered (the run then ends in a stall
    report naming the links, ``which is failed``). Link-level backends only."""
    links = getattr(network, "links", None)
    if links is None:
        raise no_links(network.name)
    touched = [link for link in links() if device in (link.src, link.dst)]
    if not touched:
        raise KeyError(f"no link leads into or out of device {device!r}")
    for link in touched:
        link.failed = True
        link.take_down()
