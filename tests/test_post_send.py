"""``ctx.post`` is ``ctx.send`` without its event (the native algorithms' way, for speed): the
same figures, and a message nobody receives is reported naming the phase that sent it, as a
``ctx.send`` is. Each algorithm runs both ways on a small ring, on both analytical backends."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from simpy_astra.workloads.chakra import make_node
from simpy_astra.workloads.chakra.schema import ALL_REDUCE, COMM_COLL_NODE, COMP_NODE
from tests.sim_helpers import net, run_sim

#: a ring all-reduce that sends one message more than anyone receives (``SEND`` is replaced)
ALGOS = textwrap.dedent('''
    def ring(ctx):
        n, i = len(ctx.members), ctx.index
        right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
        yield ctx.endpoint()
        for step in range(2 * (n - 1)):
            ctx.SEND(right, ctx.size_bytes // n)
            yield ctx.recv(left, ctx.size_bytes // n)
            yield ctx.endpoint(ctx.size_bytes // n if step < n - 1 else 0)
        ctx.SEND(right, 64, tag=9)  # received by nobody
''')


def _run(tmp: Path, monkeypatch: pytest.MonkeyPatch, call: str, backend: str) -> tuple:
    folder = tmp / call
    folder.mkdir()
    module = f"post_send_{call}"
    (folder / f"{module}.py").write_text(ALGOS.replace("SEND", call))
    monkeypatch.syspath_prepend(str(folder))
    ranks = [[make_node(1, "c", COMP_NODE, duration_micros=r + 1),
              make_node(2, "ar", COMM_COLL_NODE, deps=[1], attrs={"comm_type": ALL_REDUCE, "comm_size": 1 << 20})]
             for r in range(4)]
    reports, sim = run_sim(folder, ranks, net("Ring", 4), {"all-reduce-implementation": [f"{module}:ring"],
                                                           "preferred-dataset-splits": 2},
                           backend=backend, fold=False)
    return {n: (r.finished_cycles, r.exposed_comm_cycles, r.times) for n, r in reports.items()}, sim.warnings


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
def test_post_is_send_without_its_event(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    sent = _run(tmp_path, monkeypatch, "send", backend)
    posted = _run(tmp_path, monkeypatch, "post", backend)
    assert posted == sent
    figures, warnings = posted
    assert figures[0][0] > 0
    # the message left over names the phase that sent it, not only its NPU
    assert any("NPU 0 all_reduce phase of chunk stream" in w and "tag" in w for w in warnings), warnings
