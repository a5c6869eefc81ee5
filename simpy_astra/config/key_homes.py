"""Where a top-level scenario key that is no scenario field belongs: a cluster's field written
beside ``cluster:`` instead of in it, a generator's parameter beside ``workload:``, or a
``megatron:`` block, which Megatron-LM users write by analogy with ``cluster:``. The unknown-key
error then says where to move it, not only which sixteen keys a scenario has."""

from __future__ import annotations

from simpy_astra.config.cluster_fields import CLUSTER_KEYS, OLD_KEYS

#: a generator's parameters a user may write at the top level
_WORKLOAD_KEYS = ("generate", "args")


def key_home(key: object) -> str | None:
    """The fix for top-level ``key``, or None when it has no home elsewhere."""
    if not isinstance(key, str):
        return None
    if key.lower() == "megatron":
        return ("a Megatron-LM job is written workload: {generate: megatron, args: '--num-layers ...'} beside "
                "cluster: {preset: NAME, gpus: N}")
    if key in CLUSTER_KEYS or key in OLD_KEYS:
        more = "" if key in ("preset", "gpus") else f", {key}: ..."
        return f"it is a field of cluster:, so move it there (cluster: {{preset: NAME, gpus: N{more}}})"
    if key in _WORKLOAD_KEYS:
        return "it is a field of workload:, so move it there (workload: {generate: megatron, args: '...'})"
    return None
