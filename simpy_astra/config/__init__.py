"""Typed, validated configuration, read once at the edge of a run.

One module per input: ASTRA-sim's network YAML (``network``), system JSON (``system``),
remote-memory JSON (``memory``) and communicator-group JSON (``comm_groups``), the reading and
coercion they share (``file_text``, ``json_reader``, ``yaml_reader``, ``input_bounds``,
``field_values``, ``unknown_keys``), our scenario YAML (``scenario``) and the record of
everything one run needs (``inputs``). Each loader returns a frozen dataclass whose field names
carry their units; defaults live in the dataclass definitions and nowhere else. Where ASTRA-sim
would crash, hang or quietly misread a value we raise :class:`InputError` naming the file, the
field and the fix.

The names below are the four file formats' public interface, importable from here.
"""

from simpy_astra.config.comm_groups import (
    NO_GROUPS_MARKER,
    comm_groups_from_mapping,
    ignored_comm_groups_warning,
    load_comm_groups_json,
)
from simpy_astra.config.memory import RemoteMemoryConfig, load_remote_memory_json, remote_memory_from_mapping
from simpy_astra.config.network import NetworkConfig, load_network_yaml, network_from_mapping, with_cost
from simpy_astra.config.system import SystemConfig, load_system_json, system_from_mapping
from simpy_astra.config.system_collectives import load_per_node_custom_yaml, parse_implementation
from simpy_astra.config.yaml_reader import read_yaml_file

__all__ = [
    "NO_GROUPS_MARKER", "NetworkConfig", "RemoteMemoryConfig", "SystemConfig", "comm_groups_from_mapping",
    "ignored_comm_groups_warning", "load_comm_groups_json", "load_network_yaml", "load_per_node_custom_yaml",
    "load_remote_memory_json", "load_system_json", "network_from_mapping", "parse_implementation",
    "read_yaml_file", "remote_memory_from_mapping", "system_from_mapping", "with_cost",
]
