"""The loop guard covers a collective algorithm written as an object with ``__call__``: such an
instance has no ``__code__``, so the guard (which looks for the user's code behind a phase's
function) took it for ours, and one that looped without time passing hung the run.

No timers: the guard's limits are lowered for the test, and each algorithm counts its own
iterations, stopping itself (a different error) at 20 times the guard's limit, so a guard that
misses it fails the test instead of hanging it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from simpy_astra.cli.main import main
from simpy_astra.engine import phase_process
from simpy_astra.infra import zero_time
from tests.test_extension_audit import write_scenario

LIMIT = 1_000  # the guard's, lowered from 100,000 for the test
MODULE = textwrap.dedent('''
    import functools

    from simpy_astra.collectives.base import CollectiveAlgorithm, ring_final_size

    MISSED = 20 * 1_000  # past the guard's lowered limit: it missed us


    class Spinner:
        """Waits on events that take no time, for ever."""

        def __init__(self):
            self.turns = 0

        def __call__(self, ctx, **extra):
            while True:
                self.turns += 1
                if self.turns > MISSED:
                    raise RuntimeError("not stopped by the loop guard")
                yield ctx.wait(0)


    class Poster:
        """Sends for ever without a yield: SimPy never gets the control back."""

        def __init__(self):
            self.posts = 0

        def __call__(self, ctx):
            while True:
                self.posts += 1
                if self.posts > MISSED:
                    raise RuntimeError("not stopped by the loop guard")
                ctx.send(ctx.members[ctx.index ^ 1], 64)
            yield ctx.endpoint()


    SPINNER = CollectiveAlgorithm("spinner", Spinner(), ring_final_size)
    PARTIAL = CollectiveAlgorithm("partial", functools.partial(Spinner(), extra=1), ring_final_size)
    POSTER = CollectiveAlgorithm("poster", Poster(), ring_final_size)
    BARE = Spinner()  # no CollectiveAlgorithm: its __call__ is a generator function
''')


@pytest.fixture
def folder(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / ".cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")
    monkeypatch.setattr(zero_time, "ZERO_TIME_RESUMES", LIMIT)  # the one zero-time rule's
    monkeypatch.setattr(phase_process, "POSTS_PER_INSTANT", LIMIT)
    return tmp_path


def _error_line(folder: Path, capsys, module: str, attribute: str) -> str:
    (folder / f"{module}.py").write_text(MODULE)
    workload = {"generate": "microbench", "collective": "all_reduce", "size": 2**20, "num_npus": 8}
    path = write_scenario(folder, workload, "FullyConnected", 8,
                          system={"all-reduce-implementation": [f"{module}:{attribute}"]})
    assert main(["run", path.name]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0], lines[-5:]
    return lines[0]


@pytest.mark.parametrize("attribute", ["SPINNER", "PARTIAL", "BARE"])
def test_a_callable_instance_that_loops_without_time_passing_gets_the_guards_line(folder, capsys, attribute):
    module = f"callable_{attribute.lower()}"
    line = _error_line(folder, capsys, module, attribute)
    assert "not stopped by the loop guard" not in line, line
    assert line.startswith(f"error: collective algorithm 'Spinner.__call__' ({folder / module}.py:"), line
    assert f"{LIMIT:,} times at 0 ns without simulated time passing" in line


def test_a_callable_instance_that_posts_for_ever_gets_the_guards_line(folder, capsys):
    line = _error_line(folder, capsys, "callable_poster", "POSTER")
    assert "not stopped by the loop guard" not in line, line
    assert line.startswith(f"error: NPU 0: collective algorithm 'Poster.__call__' ({folder}/callable_poster.py:"), line
    assert f"{LIMIT:,} messages posted at 0 ns without time passing" in line


ENDS = textwrap.dedent('''
    from simpy_astra.collectives.base import CollectiveAlgorithm, ring_final_size


    def swap(ctx):
        """Swap the buffer with the neighbour index XOR 1, then the endpoint delay."""
        peer = ctx.members[ctx.index ^ 1]
        ctx.send(peer, ctx.size_bytes)
        yield ctx.recv(peer, ctx.size_bytes)
        yield ctx.endpoint()


    class Swap:
        def __call__(self, ctx):
            yield from swap(ctx)


    AS_FUNCTION = CollectiveAlgorithm("swap", swap, ring_final_size)
    AS_OBJECT = CollectiveAlgorithm("swap_object", Swap(), ring_final_size)
''')


def test_a_callable_instance_that_ends_runs_as_its_function_does(folder, capsys):
    (folder / "callable_ends.py").write_text(ENDS)
    outs = []
    for attribute in ("AS_FUNCTION", "AS_OBJECT"):
        workload = {"generate": "microbench", "collective": "all_reduce", "size": 2**20, "num_npus": 8}
        path = write_scenario(folder, workload, "FullyConnected", 8, name=f"{attribute}.yaml",
                              system={"all-reduce-implementation": [f"callable_ends:{attribute}"]})
        assert main(["run", path.name, "--quiet"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and outs[0].startswith("iteration time ")
