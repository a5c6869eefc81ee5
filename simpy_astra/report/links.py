"""Link statistics for people: busiest first, devices by readable names, JSON records."""

from __future__ import annotations

from simpy_astra.network.fabric import LinkStats


def busiest_links(network) -> list[LinkStats] | None:
    """Link statistics of backends that keep them, busiest first (None otherwise); idle
    links too: a zero-byte link is a finding, not noise."""
    stats = network.link_stats()
    if stats is None:
        return None

    def device_order(device) -> tuple:  # NPU ids, then switches by name
        return (0, device, "") if isinstance(device, int) else (1, 0, str(device))

    return sorted(stats, key=lambda s: (-s.busy_ns, -s.bytes, device_order(s.src), device_order(s.dst)))


def link_fields(stats: LinkStats) -> dict:
    """One link's JSON record; the packet backend adds its largest queue and stall time."""
    out = {"from": stats.src, "to": stats.dst, "bytes": stats.bytes, "busy_ns": stats.busy_ns}
    if stats.max_queue_bytes is not None:
        out["max_queue_bytes"] = stats.max_queue_bytes
        out["stall_ns"] = stats.stall_ns
    return out
