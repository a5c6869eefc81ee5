"""The one place that encodes message tags (ASTRA-sim's numbering, which matching relies on).

Workload tags (COMM_SEND/COMM_RECV nodes, custom collectives) live below 500,000,000 and are
taken modulo that; a collective chunk's messages use ``500,000,000 + stream id``. Stream ids
of the default communicator count from 0, those of communicator group ``g`` from
``g * 1,000,000``, so a group stream's tag tells its group.
"""

from __future__ import annotations

NATIVE_TAG_SPACE = 500_000_000
COLLECTIVE_TAG_BASE = 500_000_000
GROUP_STREAM_ID_BASE = 1_000_000


def native_tag(tag: int) -> int:
    """A workload's tag as messages carry it."""
    return tag % NATIVE_TAG_SPACE


def stream_tag(stream_id: int) -> int:
    """The tag of a collective chunk's messages."""
    return stream_id % NATIVE_TAG_SPACE + COLLECTIVE_TAG_BASE


def first_stream_id(group_id: int) -> int:
    """Where communicator group ``group_id``'s stream ids start (0: the default one)."""
    return group_id * GROUP_STREAM_ID_BASE


def group_of_stream_tag(tag: int) -> int | None:
    """The group id a collective tag belongs to, None for workload and default tags."""
    if tag < COLLECTIVE_TAG_BASE + GROUP_STREAM_ID_BASE:
        return None
    return (tag - COLLECTIVE_TAG_BASE) // GROUP_STREAM_ID_BASE


#: group ``g``'s stream tags are group ``g + GROUP_TAG_PERIOD``'s: stream ids wrap in the tag space
GROUP_TAG_PERIOD = NATIVE_TAG_SPACE // GROUP_STREAM_ID_BASE


def group_residue_of_stream_tag(tag: int) -> int | None:
    """``g mod GROUP_TAG_PERIOD`` for a stream tag of group ``g`` (0 also for the default
    communicator's), None for workload tags. Group ids from 500 on share tags with lower ones
    (ids wrap), so a tag names a residue class of groups, not one group."""
    if tag < COLLECTIVE_TAG_BASE:
        return None
    return (tag - COLLECTIVE_TAG_BASE) // GROUP_STREAM_ID_BASE


def moved_group_tag(tag: int, group_id: int, image_group_id: int) -> int:
    """A group stream's tag once its group is replaced by ``image_group_id`` (wrapping as
    stream ids do)."""
    moved = tag - COLLECTIVE_TAG_BASE + (image_group_id - group_id) * GROUP_STREAM_ID_BASE
    return moved % NATIVE_TAG_SPACE + COLLECTIVE_TAG_BASE
