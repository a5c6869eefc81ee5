"""Extensions written from the docs alone, fourteenth round: each differs from the docs'
examples and from the earlier rounds (``test_extensions_from_docs.py``,
``test_extensions_round2.py`` .. ``round13.py``, ``test_extension_*.py``) and is checked against
a figure derived here from the closed forms the docs state, or, for a mistake of the
researcher's, against the one line the docs promise. The researcher's module is
``tests/data/round14/r14.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.researcher_folder import module_fixture
from tests.test_extensions_round6 import _cli, _system, _write
from tests.test_extensions_round7 import _bench, _net
from tests.test_extensions_round9 import _one_line

HERE = Path(__file__).resolve().parent
R14 = HERE / "data" / "round14" / "r14.py"

#: a folder of the researcher's own holding r14.py, the working directory
r14 = module_fixture(R14)


# -- a backend of one's own that posts a message twice -----------------------------------------------

TWO_JOBS = ("jobs:\n  - {name: a, npus: [1, 3], workload: {generate: microbench, collective: all_reduce, "
            "size: 4096, num_npus: 2}}\n  - {name: b, npus: [0, 2], workload: {generate: microbench, "
            "collective: all_reduce, size: 4096, num_npus: 2}}\n")


@pytest.mark.parametrize("jobs", [False, True], ids=["one job", "two jobs"])
def test_a_backend_whose_send_posts_a_message_twice_is_named(r14, jobs):
    """docs/backends.md: a backend's ``send`` posts the message it is given with ``entry =
    self.board.post_send(...)`` and gives it its arrival. One that posted it twice (a
    retransmission) left a copy that a later receive of the same NPUs, tag and size took: the
    ring all-reduce of 4 KiB on 4 NPUs ended early, with only a warning of unmatched messages
    naming no backend. It is one line naming the class, the message and the fix, in a run of
    one job and in a run of jobs (whose ranks reach the network through a job's view: the
    message is named by its physical NPUs, job b's first, rank 0 to 1, from NPU 0 to NPU 2)."""
    if jobs:
        path = r14 / "twice.yaml"
        path.write_text(f"{TWO_JOBS}system: {_system()}\nnetwork: {_net('Ring', 4)}\nbackend: 'r14:RETRANSMITS'\n")
        first = "2048 B from NPU 0 to NPU 2"
    else:
        path = _write(r14, "twice.yaml", _bench("all_reduce", 4096, 4), _net("Ring", 4), "'r14:RETRANSMITS'")
        first = "1024 B from NPU 0 to NPU 1"
    line = _one_line(_cli(r14, "run", path.name, "--quiet", status=2))
    assert line.startswith("error: network backend 'r14:Retransmits', send(): posted the message of "), line
    assert first in line and "2 times" in line and "post_send once per send" in line, line
