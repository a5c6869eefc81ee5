"""Ctrl-C and SIGTERM: one line, exit 130 or 143, no traceback, whatever user code catches.

Each case starts the real command in a child process, waits until the user's code says it
is running (a line on stderr, not a sleep), sends a real signal and waits for the exit.
Nothing depends on timing: the generous timeout only guards against a hang.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from simpy_astra.infra.stopping import EXIT_INTERRUPTED, EXIT_TERMINATED
from tests.ctrl_c import sigint_by_default

ROOT = Path(__file__).resolve().parents[1]
READY = "READY"
SYSTEM = {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
          "preferred-dataset-splits": 1, "all-gather-implementation": ["ring"],
          "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["ring"],
          "collective-optimization": "baseline"}

#: user collectives: one that yields forever and swallows everything, one that never yields;
#: the first passes messages round the ring forever (the stall watchdog stops a phase that
#: only waits, with no message moving: tests/test_extension_misuse.py)
ALGOS = textwrap.dedent(f'''
    import sys

    def _ready():
        if not getattr(sys, "_said_ready", False):
            sys._said_ready = True
            open("ready", "w").close()  # a sweep's worker may not show its stderr
            print("{READY}", file=sys.stderr, flush=True)

    def spin(ctx):
        _ready()
        n, i = len(ctx.members), ctx.index
        right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
        while True:
            try:
                ctx.send(right, 64)
                yield ctx.recv(left, 64)
            except BaseException:
                pass

    def busy(ctx):
        _ready()
        while True:
            try:
                pass
            except BaseException:
                pass
        yield ctx.endpoint()
''')


def _scenario(folder: Path, algorithm: str) -> Path:
    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.schema import COMM_COLL_NODE

    for rank in range(4):
        write_et(str(folder / f"w.{rank}.et"), [make_node(0, "ar", COMM_COLL_NODE, attrs={
            "comm_type": 0, "comm_size": 4096, "is_cpu_op": False})])
    (folder / "user_algos.py").write_text(ALGOS)
    system = {**SYSTEM, "all-reduce-implementation": [f"user_algos:{algorithm}"]}
    path = folder / "s.yaml"
    path.write_text(f"workload: {folder / 'w'}\nsystem: {json.dumps(system)}\n"
                    f"network: {{topology: [Ring], npus_count: [4], bandwidth: [50], latency: [500]}}\n"
                    f"remote_memory: {{memory-type: NO_MEMORY_EXPANSION}}\n")
    return path


def _stop(argv: list[str], cwd: Path, signum: int, marker: bool = False) -> tuple[int, list[str]]:
    env = {**os.environ, "PYTHONPATH": str(cwd), "SIMPY_ASTRA_PROGRESS": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "simpy_astra", *argv], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_by_default)
    try:
        if marker:  # the user's code runs in a worker: wait for the file it writes
            import time

            deadline = time.monotonic() + 300  # a guard against a hang, not a speed check
            while not (cwd / "ready").exists():
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
                time.sleep(0.05)
        else:  # blocks until the user's code runs: no sleep
            return _wait_ready_then_stop(proc, signum)
        proc.send_signal(signum)
        _, rest = proc.communicate(timeout=300)  # a guard against a hang, not a speed check
        code = proc.returncode
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, [line for line in rest.splitlines() if line.strip()]


@pytest.mark.parametrize("signum, code, words", [
    (signal.SIGINT, EXIT_INTERRUPTED, "stopped by SIGINT (Ctrl-C)"),
    (signal.SIGTERM, EXIT_TERMINATED, "stopped by SIGTERM"),
])
def test_a_looping_user_collective_cannot_swallow_the_stop(tmp_path, signum, code, words):
    scenario = _scenario(tmp_path, "spin")
    got, lines = _stop(["run", str(scenario), "--quiet", "--json-out", "out.json"], tmp_path, signum)
    assert got == code, lines
    assert len(lines) == 1 and lines[0].startswith("interrupted: ") and words in lines[0], lines
    assert not (tmp_path / "out.json").exists()


def test_code_that_never_yields_is_stopped_too(tmp_path):
    scenario = _scenario(tmp_path, "busy")
    got, lines = _stop(["run", str(scenario), "--quiet"], tmp_path, signal.SIGINT)
    assert got == EXIT_INTERRUPTED, lines
    assert len(lines) == 1 and "stopped by SIGINT" in lines[0], lines


def test_the_astra_flag_form_stops_the_same_way(tmp_path):
    _scenario(tmp_path, "spin")
    system = {**SYSTEM, "all-reduce-implementation": ["user_algos:spin"]}
    (tmp_path / "sys.json").write_text(json.dumps(system))
    (tmp_path / "net.yml").write_text("topology: [Ring]\nnpus_count: [4]\nbandwidth: [50]\nlatency: [500]\n")
    (tmp_path / "mem.json").write_text(json.dumps({"memory-type": "NO_MEMORY_EXPANSION"}))
    got, lines = _stop(["--workload-configuration=w", "--system-configuration=sys.json",
                        "--network-configuration=net.yml", "--remote-memory-configuration=mem.json"],
                       tmp_path, signal.SIGINT)
    assert got == EXIT_INTERRUPTED and len(lines) == 1 and "stopped by SIGINT" in lines[0], lines


def test_outside_the_engine_a_stop_is_one_line_too(tmp_path):
    # a plugin module that loops while it is imported: the command is not simulating yet
    (tmp_path / "slow_plugin.py").write_text(textwrap.dedent(f'''
        import sys
        print("{READY}", file=sys.stderr, flush=True)
        while True:
            pass
    '''))
    scenario = _scenario(tmp_path, "spin")
    got, lines = _stop(["run", str(scenario), "--plugin", "slow_plugin"], tmp_path, signal.SIGTERM)
    assert got == EXIT_TERMINATED and len(lines) == 1 and "stopped by SIGTERM" in lines[0], lines


def test_a_sweep_whose_points_loop_stops_on_ctrl_c(tmp_path):
    import yaml

    scenario = _scenario(tmp_path, "spin")
    base = yaml.safe_load(scenario.read_text())
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": base, "axes": {"network.bandwidth": [[10], [20]]}}))
    got, lines = _stop(["sweep", str(sweep), "--out", str(tmp_path / "out"), "--jobs", "2", "--no-plots"],
                       tmp_path, signal.SIGINT, marker=True)
    assert got == EXIT_INTERRUPTED, lines
    assert any(line.startswith("interrupted") for line in lines), lines
    assert not any("Traceback" in line for line in lines), lines


def _wait_ready_then_stop(proc: subprocess.Popen, signum: int) -> tuple[int, list[str]]:
    """Read stderr until the command says READY (its code is running: no sleep), send
    ``signum``, and return the exit status and the non-empty lines after READY."""
    try:
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if line.strip() == READY:
                break
        else:
            pytest.fail(f"the command ended before it was ready: {''.join(seen)}")
        proc.send_signal(signum)
        # stderr is read on through its buffer (it holds what came with READY); a child that
        # runs on is killed after 300 s, a guard against a hang, not a speed check
        guard = threading.Timer(300, proc.kill)
        guard.start()
        try:
            rest = proc.stderr.read()
        finally:
            guard.cancel()
        code = proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, [line for line in rest.splitlines() if line.strip() and line.strip() != READY]


#: convert text on a slow disk: the second rank's file takes until the signal comes (the
#: command's own handler, cleanup and exit status are the real ones)
SLOW_CONVERT = textwrap.dedent(f'''
    import sys
    import simpy_astra.workloads.text_workload as text_workload
    from simpy_astra.cli.main import main

    write = text_workload.write_et

    def slow_write(path, *args, **kwargs):
        write(path, *args, **kwargs)
        if path.endswith(".1.et"):
            print("{READY}", file=sys.stderr, flush=True)
            while True:
                pass

    text_workload.write_et = slow_write
    sys.exit(main(sys.argv[1:]))
''')


@pytest.mark.parametrize("signum, code, words", [
    (signal.SIGINT, EXIT_INTERRUPTED, "stopped by SIGINT (Ctrl-C)"),
    (signal.SIGTERM, EXIT_TERMINATED, "stopped by SIGTERM"),
])
def test_convert_text_stops_in_one_line_and_removes_the_ranks_it_wrote(tmp_path, signum, code, words):
    (tmp_path / "slow_convert.py").write_text(SLOW_CONVERT)
    source = ROOT / "scenarios" / "workloads" / "text" / "Resnet50_DataParallel.txt"
    proc = subprocess.Popen([sys.executable, "slow_convert.py", "convert", "text", "--input", str(source),
                             "--output", "out/resnet", "--num-npus", "4", "--num-passes", "1"], cwd=tmp_path,
                            env={**os.environ, "SIMPY_ASTRA_PROGRESS": "0"}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=sigint_by_default)
    got, lines = _wait_ready_then_stop(proc, signum)
    assert got == code, lines
    assert len(lines) == 1 and lines[0].startswith("interrupted: ") and words in lines[0], lines
    assert not list((tmp_path / "out").glob("resnet*"))  # rank 0 was written, and is gone again


def test_calibrate_stops_in_one_line_and_writes_nothing(tmp_path):
    """calibrate's simulations run the user's looping all-reduce (named in the system JSON);
    Ctrl-C stops the fit with one line and no network.yml, system.json or calibration.json."""
    (tmp_path / "user_algos.py").write_text(ALGOS)
    system = {**SYSTEM, "all-reduce-implementation": ["user_algos:spin"]}
    (tmp_path / "sys.json").write_text(json.dumps(system))
    logs = ROOT / "tests" / "data" / "nccl" / "dgx-a100-superbench"
    proc = subprocess.Popen([sys.executable, "-m", "simpy_astra", "calibrate", str(logs / "all_reduce.log"),
                             "--network", str(logs / "network.yml"), "--system", "sys.json", "--out", "cal"],
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path), "SIMPY_ASTRA_PROGRESS": "0",
                                               "SIMPY_ASTRA_CACHE": str(tmp_path / "cache")},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_by_default)
    got, lines = _wait_ready_then_stop(proc, signal.SIGINT)
    assert got == EXIT_INTERRUPTED, lines
    assert len(lines) == 1 and "stopped by SIGINT" in lines[0], lines
    assert not (tmp_path / "cal").exists() or not list((tmp_path / "cal").iterdir())


#: a command stopped by a signal, then the same signal again on its way out (a Ctrl-C held
#: down): the stop's handlers are handed back as the command ends
HELD_DOWN = textwrap.dedent('''
    import os, signal, sys
    from simpy_astra.infra import stopping
    # Python's own Ctrl-C handler, as a terminal starts it: a shell's background job (CI run
    # with `&`) starts with SIGINT ignored, and restore() would then rightly restore that
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if sys.argv[1] == "process":
        stopping.process_ends_after()
    restore = stopping.install()
    try:
        os.kill(os.getpid(), signal.SIGINT)  # the stop
    except stopping.Stopped:
        pass
    restore()
    os.kill(os.getpid(), signal.SIGINT)  # held down: it arrives after the command ended
    print("left cleanly")
''')


@pytest.mark.parametrize("caller", ["process", "library"])
def test_a_signal_after_the_stopped_command_is_ignored_only_by_a_process_that_is_leaving(caller):
    """``python -m simpy_astra`` leaves after its command: a second SIGINT in its last flush
    raised KeyboardInterrupt (a traceback and exit -2 where 130 was due; seen holding Ctrl-C
    down over a sweep). A script calling the CLI's main gets its own handlers back."""
    done = subprocess.run([sys.executable, "-c", HELD_DOWN, caller], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    if caller == "process":
        assert (done.returncode, done.stdout.strip()) == (0, "left cleanly"), done.stderr
    else:
        assert done.returncode != 0 and "KeyboardInterrupt" in done.stderr, done.stderr
