"""Extensions written from the docs alone, thirteenth round: each differs from the docs'
examples and from the earlier rounds (``test_extensions_from_docs.py``,
``test_extensions_round2.py`` .. ``round12.py``, ``test_extension_*.py``) and is checked against
a figure derived here from the closed forms the docs state, or, for a mistake of the
researcher's, against the one line the docs promise. The researcher's module is
``tests/data/round13/r13.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.researcher_folder import researcher_folder
from tests.test_extensions_round4 import ring_all_reduce
from tests.test_extensions_round6 import _cli, _write
from tests.test_extensions_round7 import _bench, _net
from tests.test_extensions_round9 import _one_line

HERE = Path(__file__).resolve().parent
R13 = HERE / "data" / "round13" / "r13.py"


@pytest.fixture
def r13(tmp_path: Path, monkeypatch) -> Path:
    """A folder of the researcher's own holding r13.py, the working directory; the registries
    are left as they were found."""
    with researcher_folder(tmp_path, monkeypatch, {"r13": R13.read_text()}) as folder:
        yield folder


# -- a backend of one's own that posts a message twice ---------------------------------------------

def test_a_backend_whose_send_posts_a_message_twice_is_named_not_a_warning(r13):
    """docs/backends.md: a backend's ``send`` posts the message with ``entry =
    self.board.post_send(...)`` and gives it its arrival. One that modelled a retransmission
    by posting the message again (and giving the copy an arrival too) completed every sender
    twice: the ring all-reduce of 4 KiB on 4 NPUs ended early, and the run said only "warning:
    simulation ended ... with unmatched messages", naming no backend. It is now one line
    naming the class, the method and the fix; posting once gives the native ring's figure,
    E + 2 (n - 1) (d(S/n) + E) + (n - 1) P(S/n)."""
    once = _write(r13, "once.yaml", _bench("all_reduce", 4096, 4), _net("Ring", 4), "'r13:SENDS_ONCE'")
    assert f"iteration time {ring_all_reduce(4, 4096):,} ns" in _cli(r13, "run", once.name, "--quiet").stdout
    twice = _write(r13, "twice.yaml", _bench("all_reduce", 4096, 4), _net("Ring", 4), "'r13:RESENDS'")
    line = _one_line(_cli(r13, "run", twice.name, "--quiet", status=2))
    assert line.startswith("error: network backend 'r13:Resends', send(): board.post_send was called 2 times for "
                           "the message of 1024 B from NPU 0 to NPU 1"), line
    assert "post it once" in line
