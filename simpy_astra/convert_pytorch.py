"""Moved to :mod:`simpy_astra.workloads.pytorch`; these names stay importable from here."""
from simpy_astra.workloads.pytorch.convert import convert, main  # noqa: F401
from simpy_astra.workloads.pytorch.host_trace import group_ids, process_groups  # noqa: F401
from simpy_astra.workloads.pytorch.mlc import MISSING_EXTRA, convert_json, rename_groups  # noqa: F401
