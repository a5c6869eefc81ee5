"""The one place where configuration units become simulator units (integer ns, bytes).

ASTRA-sim uses two meanings of "GB": network bandwidths are GiB/s (2^30 B), local memory
bandwidth and peak performance are decimal (1e9). Keeping both conversions here, with the
reference's operation order, is what makes truncated times match exactly.

Units live in names, one suffix per unit:

* ``_ns``, ``_us``, ``_s``: time; ``_bytes``, ``_gib`` (2^30 B), ``_gb`` (10^9 B): size;
* ``_gib_s``: GiB/s (2^30 B per s), ``_gb_s``: GB/s (10^9 B per s), ``_gbit_s``: Gbit/s
  (10^9 bits per s); ``_bytes_per_ns`` once converted here;
* ``_gbps`` is ASTRA-sim's own spelling and means what ASTRA-sim means by it: GiB/s for a
  network's ``bandwidth_gbps``, 10^9 B/s for ``local_mem_bw_gbps``. New names use the three
  suffixes above; keys users already write under an older name stay accepted (a cluster's
  ``hbm_gbps``, ``l2_gbps``, ``inter_node_gbps``, in presets, scenarios and sweep axes:
  ``config/cluster_fields.py``'s ``OLD_KEYS``).
"""

from __future__ import annotations

NS_PER_MICROSECOND = 1000


def network_gbps_to_bytes_per_ns(bandwidth_gbps: float) -> float:
    """Network link bandwidth: GB/s with GB = 2^30 bytes, to bytes per ns."""
    return bandwidth_gbps * (1 << 30) / 1_000_000_000


def local_mem_gbps_to_bytes_per_s(bandwidth_gbps: float) -> float:
    """Local memory bandwidth: GB/s with GB = 1e9 bytes, to bytes per second."""
    return bandwidth_gbps * 1_000_000_000


def tflops_to_flops(peak_tflops: float) -> float:
    return peak_tflops * 1_000_000_000_000


def replay_duration_ns(duration_micros: int) -> int:
    """Replayed node runtime: microseconds to ns, and 1 ns for a zero duration."""
    return duration_micros * NS_PER_MICROSECOND if duration_micros else 1


def reduction_delay_ns(size_bytes: int, local_mem_bytes_per_s: float) -> int:
    """Time to reduce ``size_bytes`` in local memory: read, read, write, each truncated."""
    if local_mem_bytes_per_s <= 0:
        return 0  # the reference divides by zero here; x86 turns the inf into 0
    one_pass = int(size_bytes / local_mem_bytes_per_s * 1e9)
    return 3 * one_pass


def bytes_to_gib(size_bytes: int) -> float:
    """Memory sizes as the reference prints them: GB meaning 2^30 bytes."""
    return size_bytes / (1 << 30)
