"""The local copy an out-of-place nccl-tests all-gather or all-to-all makes of each rank's own chunk.

An out-of-place all-gather must place each rank's own input (size/n bytes) into its slot of
the output buffer, and nccl-tests' all-to-all sends each rank's own block to itself: in
both the rank's own chunk reaches its output through the GPU's memory, not the network,
which ASTRA-sim's collectives (and so the simulated time) do not include. The other
collectives need no such copy: an all-reduce or reduce-scatter writes its result while it
reduces, and in-place runs have the chunk where it belongs. The DGX A100 logs show it: the
out-of-place all-gather is 3-6% slower than its in-place column from 64 MiB up, while the
all-reduce's and reduce-scatter's columns agree within 1.5% (docs/calibration.md).

The copy is charged as one read and one write of size/n bytes at the GPU's peak memory
bandwidth, from the vendor's datasheet (found by the device names nccl-tests prints),
or ``--gpu-memory-bw`` where the name is not known; it is a stated hardware figure, not a
fitted one, since a log of one collective cannot separate it from the link bandwidth.
"""

from __future__ import annotations

import os

from simpy_astra.errors import InputError

#: (substring of the device name nccl-tests prints, peak memory bandwidth in GB/s = 1e9 B/s),
#: from NVIDIA's datasheets; the first match wins, so more specific names come first
GPU_MEMORY_GBPS: tuple[tuple[str, float], ...] = (
    ("A100-SXM4-80GB", 2039.0),
    ("A100 80GB PCIe", 1935.0),
    ("A100-SXM4-40GB", 1555.0),
    ("A100-PCIE-40GB", 1555.0),
    ("H100 80GB HBM3", 3350.0),  # H100 SXM5
    ("H100 PCIe", 2000.0),
    ("H100 NVL", 3900.0),
    ("H200", 4800.0),
    ("V100-SXM2", 900.0),
)

#: collectives whose out-of-place nccl-tests run copies each rank's own chunk locally
COPYING_COLLECTIVES = ("all_gather", "all_to_all")


def memory_gbps(devices: list[str], override_gbps: float | None = None) -> float | None:
    """The GPU memory bandwidth (GB/s) for a log: ``override_gbps`` if given, else the
    datasheet value of its devices when all of them are one known model, else None."""
    if override_gbps is not None:
        return override_gbps
    found = set()
    for name in devices:
        match = next((gbps for key, gbps in GPU_MEMORY_GBPS if key.lower() in name.lower()), None)
        if match is None:
            return None
        found.add(match)
    return found.pop() if len(found) == 1 else None


def own_chunk_copy_ns(collective: str, nccl_size_bytes: int, ranks: int, memory_bw_gbps: float | None,
                      in_place: bool) -> float:
    """Time in ns to copy a rank's own chunk (read and write) when nccl-tests' run does so."""
    if in_place or memory_bw_gbps is None or collective not in COPYING_COLLECTIVES:
        return 0.0
    chunk_bytes = nccl_size_bytes / ranks
    return 2 * chunk_bytes / memory_bw_gbps  # bytes / (1e9 B/s) = ns


def check_memory_bw(value_gbps: float | None) -> None:
    """``--gpu-memory-bw`` must be a positive, finite rate: it divides the copied bytes."""
    if value_gbps is not None and not (0 < value_gbps < float("inf")):
        raise InputError(f"--gpu-memory-bw must be a positive number of GB/s (got {value_gbps:g})")


def copy_notes(logs: list, override_gbps: float | None, in_place: bool) -> list[str]:
    """One line per copying log saying at what rate its own-chunk copy is priced, or why it is
    not, so that a figure that depends on it is never read without it."""
    copying = [log for log in logs if log.collective in COPYING_COLLECTIVES]
    if override_gbps is not None and (in_place or not copying):  # it was taken, and read by nothing
        why = "in-place times copy nothing" if in_place else \
            f"the logs ({', '.join(sorted({log.collective for log in logs}))}) copy nothing"
        return [f"warning: --gpu-memory-bw changes nothing: only the own-chunk copy of an out-of-place "
                f"all_gather or all_to_all log reads it, and {why}; remove it"]
    if in_place:
        return []
    notes = []
    for log in logs:
        if log.collective not in COPYING_COLLECTIVES:
            continue
        rate = memory_gbps(log.devices, override_gbps)
        where = os.path.basename(log.path)
        if rate is None:
            names = ", ".join(sorted(set(log.devices))) or "not printed"
            notes.append(f"own-chunk copy of {where}: not modelled (GPU {names} not in the datasheet "
                         f"table; give --gpu-memory-bw GB/s)")
        else:
            source = "--gpu-memory-bw" if override_gbps is not None else f"{log.devices[0]} datasheet"
            notes.append(f"own-chunk copy of {where}: at {rate:g} GB/s ({source})")
    return notes
