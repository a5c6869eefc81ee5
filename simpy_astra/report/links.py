"""Link statistics for people: busiest first, devices by readable names, JSON records."""

from __future__ import annotations


def busiest_links(network) -> list | None:
    """Link statistics of backends that keep them, busiest first (None otherwise)."""
    complete = getattr(network, "complete_links", None)
    if complete is not None:  # idle links too: a zero-byte link is a finding, not noise
        complete()
    stats = network.link_stats()
    if stats is None:
        return None
    def device_order(device) -> tuple:  # NPU ids, then named switches, then stacked ones
        return (0, device, "") if isinstance(device, int) else (1, 0, str(device))

    return sorted(stats, key=lambda s: (-s[3], -s[2], device_order(s[0]), device_order(s[1])))


def link_fields(u, v, nbytes: int, busy_ns: int, max_queue_bytes: int | None = None,
                 stall_ns: int | None = None) -> dict:
    """One link's JSON record; the packet backend adds its largest queue and stall time."""
    out = {"from": device_name(u), "to": device_name(v), "bytes": nbytes, "busy_ns": busy_ns}
    if max_queue_bytes is not None:
        out["max_queue_bytes"] = max_queue_bytes
        out["stall_ns"] = stall_ns
    return out


def device_name(device) -> int | str:
    """An NPU by its id, a switch by a string (stacked dimensions' switches are tuples inside)."""
    if isinstance(device, tuple) and len(device) == 4 and device[0] == "switch":
        _, dim, base, local = device
        return f"switch {local} of dim {dim} at NPU {base}"
    return device if isinstance(device, int | str) else str(device)


