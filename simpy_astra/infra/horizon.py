"""The horizon: how far simulated time may go, and the one check every time-like input meets.

Simulated time is an integer count of ns that must fit a signed 64-bit integer: ``HORIZON_NS``
= 2^63 - 1 ns, about 292 years. ASTRA-sim's cycle counter is an unsigned 64-bit integer; we
keep one bit so that a time plus a delay below the horizon never wraps. Every duration,
latency, start time, and the time one byte takes at a link's bandwidth, is checked against it
when it is read, and a value past it is refused naming the field. (Times below the horizon
cost nothing extra: the stall watchdog's wake-ups grow with the clock, see
:mod:`simpy_astra.running.stall`.)
"""

from __future__ import annotations

import math
from decimal import Decimal
from numbers import Integral, Real
from typing import Any

from simpy_astra.errors import InputError

HORIZON_NS = 2**63 - 1
#: the longest node duration (ET ``duration_micros``) whose ns fit the horizon
HORIZON_MICROS = HORIZON_NS // 1000
#: in words, for messages
HORIZON_TEXT = f"{HORIZON_NS} ns, about 292 years: simulated time must fit 2^63 ns"


def within(value_ns: float) -> bool:
    """Whether ``value_ns`` is a finite time within the horizon."""
    return math.isfinite(value_ns) and value_ns <= HORIZON_NS


def whole_ns(value: Any) -> int | None:
    """A delay a plug-in hands the clock (a collective's ``ctx.wait``, a backend's message
    delay) in whole ns, a fraction cut as links cut theirs (numpy's numbers, a ``Fraction`` and
    a ``Decimal``, the exact numbers a model may count in, as Python's); None when it is no
    delay: not a real number, a bool, NaN, negative or past the horizon."""
    if isinstance(value, Real | Decimal) and not isinstance(value, bool) and math.isfinite(value) \
            and 0 <= value <= HORIZON_NS:
        return int(value)
    return None


def check_ns(value_ns: float, where: str, field: str, what: str = "") -> None:
    """Refuse a time past the horizon: ``<where>: field '<field>' is <v> ns, past the horizon``."""
    if not within(value_ns):
        shown = f"{value_ns:g}" if isinstance(value_ns, float) else str(value_ns)
        raise InputError.at(where, field, f"is {shown} ns{what}, past the horizon ({HORIZON_TEXT})")


def check_bandwidth(bytes_per_ns: float, where: str, field: str, largest_bytes: int = 1) -> None:
    """Refuse a bandwidth at which ``largest_bytes`` would take longer than the horizon."""
    if bytes_per_ns <= 0 or not within(largest_bytes / bytes_per_ns):
        raise InputError.at(where, field, f"is so low that {largest_bytes:,} byte(s) would take past the "
                                          f"horizon ({HORIZON_TEXT}); raise it")


def python_number(value: Any) -> Any:
    """numpy's numbers (``np.int64``, ``np.float32``: a script's ``np.arange``) as Python's int
    or float, which they are; anything else as it is, for the caller's check to refuse."""
    if isinstance(value, int | float) or isinstance(value, bool) or not isinstance(value, Real):
        return value
    return int(value) if isinstance(value, Integral) else float(value)


def api_number(value: object, name: str, *, positive: bool = False, time: bool = True) -> float:
    """An argument of the Python API (a time, a duration, a factor, a bandwidth): a real number,
    finite, >= 0 (> 0 with ``positive``) and, for a time, within the horizon; else ValueError
    naming the argument. No silent ignore (nan), no wrap-around, no string taken as a number."""
    value = python_number(value)
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (positive and value == 0):
        rule = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be a finite number {rule} (got {value!r})")
    if time and value > HORIZON_NS:
        raise ValueError(f"{name} is {value:g} ns, past the horizon ({HORIZON_TEXT})")
    return value


def finish_past_horizon(net: Any, npu_id: int, now_ns: float, compute_ns: float = 0,
                        system: Any = None, job: Any = None) -> InputError:
    """The error of a run whose NPU would finish past the horizon (sizes over bandwidths
    added up past what time can hold), naming what to change: the ``job``'s start_ns when the
    job's own time would fit from 0 (a start of 2^63 - 1 ns blamed the bandwidth), the system's
    roofline when the NPU's compute alone goes past it, else the network's speeds."""
    if job is not None and job.start_ns and now_ns - job.start_ns <= HORIZON_NS:
        runs_ns = math.ceil(now_ns - job.start_ns)
        where = f"{job.where}.start_ns" if job.where else f"job {job.name}: start_ns"  # a job from Python
        return InputError(
            f"{where}: job {job.name} starts at {job.start_ns:,} ns and runs {runs_ns:,} ns, past 2^63 ns "
            f"(292 years), the simulated time's limit; start it at most {HORIZON_NS - runs_ns:,} ns")
    if compute_ns > HORIZON_NS and system is not None:
        return InputError(
            f"{system.source}: NPU {npu_id} would finish at {now_ns:.4g} ns, past the horizon ({HORIZON_TEXT}); "
            f"its compute alone takes {compute_ns:.4g} ns at peak-perf {system.peak_perf_tflops:g} TFLOP/s and "
            f"local-mem-bw {system.local_mem_bw_gbps:g} GB/s: raise them or shrink the workload's compute")
    return InputError(
        f"{net.source}: NPU {npu_id} would finish at {now_ns:.4g} ns, past the horizon "
        f"({HORIZON_TEXT}); the network's bandwidth {list(net.bandwidth_gbps)} GB/s and latency "
        f"{list(net.latency_ns)} ns with the workload's sizes take longer: raise the bandwidth or "
        f"shrink the sizes")
