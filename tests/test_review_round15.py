"""Review of round 15's launcher check (workloads/megatron/launcher.py): launch lines users paste
that Megatron-LM and their launcher run as the job, refused; and ones that start the job on
another count of GPUs a node, run in silence. Each test failed before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from simpy_astra.cli.main import main
from tests.researcher_folder import module_fixture
from tests.scenario_files import TINY_GPT_ARGS, error_lines, launched_as_alone, megatron_scenario
from tests.test_extensions_round4 import ring_all_reduce
from tests.test_extensions_round6 import _cli, _system, _write
from tests.test_extensions_round7 import _bench, _net
from tests.test_extensions_round14 import TWO_JOBS


@pytest.mark.parametrize("launcher", [
    "mpirun -np 16 -x NCCL_IB_DISABLE=0 -x NCCL_DEBUG=INFO python pretrain_gpt.py",
    "NCCL_P2P_DISABLE=0 NCCL_SHM_DISABLE=0 torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py",
    "mpiexec -n 16 -genv NCCL_IB_DISABLE 0 python pretrain_gpt.py",
    "srun --export=ALL,NCCL_COLLNET_ENABLE=0 -n 16 python pretrain_gpt.py"])
def test_an_nccl_setting_exported_at_nccls_own_value_runs_as_without_it(tmp_path, capsys, launcher):
    # NCCL's environment variables guide: P2P, SHM and IB are disabled by 1, CollNet enabled by
    # 1; 0 is what NCCL does unset, so the collectives take the time they take without it
    pasted, alone = launched_as_alone(tmp_path, capsys, launcher)
    assert pasted == alone


@pytest.mark.parametrize(("launcher", "word"), [
    ("mpirun -np 16 -x NCCL_IB_DISABLE=1 python pretrain_gpt.py", "NCCL_IB_DISABLE=1"),
    ("mpiexec -n 16 -genv NCCL_P2P_DISABLE 1 python pretrain_gpt.py", "NCCL_P2P_DISABLE"),
    ("mpirun -np 16 -x NCCL_SHM_DISABLE python pretrain_gpt.py", "NCCL_SHM_DISABLE")])
def test_an_nccl_setting_at_another_or_an_unknown_value_is_still_refused(tmp_path, capsys, launcher, word):
    path = megatron_scenario(tmp_path, f"{launcher} {TINY_GPT_ARGS}", preset="dgx-h100", gpus=16)
    name = word.partition("=")[0]
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.args: the pasted launcher sets {name} ({word}), which changes how long NCCL's "
        f"collectives take and is not read from here; it is not modelled (the simulator runs NCCL's own choice), "
        f"and drop it from the launcher's words"]


@pytest.mark.parametrize(("launcher", "per_node", "shown"), [
    ("srun -N 4 -n 16 python pretrain_gpt.py", 4, "-N 4 x -n 16"),
    ("srun --nodes=4 --ntasks=16 python pretrain_gpt.py", 4, "--nodes 4 x --ntasks 16"),
    ("srun -N4 -n16 python pretrain_gpt.py", 4, "-N 4 x -n 16"),
    ("mpirun -np 16 --map-by ppr:4:node python pretrain_gpt.py", 4, "-np 16 x --map-by ppr:4:node")])
def test_a_launcher_that_spreads_the_job_over_more_nodes_is_refused(tmp_path, capsys, launcher, per_node, shown):
    # 16 tasks on 4 nodes are 4 a node (Slurm's srun -N x -n, Open MPI's ppr:4:node), as
    # torchrun's --nnodes 4 --nproc_per_node 4 is, which the check refuses on nodes of 8
    path = megatron_scenario(tmp_path, f"{launcher} {TINY_GPT_ARGS}", preset="dgx-h100", gpus=16)
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.args: the pasted launcher starts {per_node} GPUs a node ({shown}), but the "
        f"cluster's nodes hold 8; give cluster.gpus_per_node: {per_node}, or drop the launcher's words"]


@pytest.mark.parametrize("launcher", [
    "srun -N 2 -n 16 python pretrain_gpt.py",
    "srun -N2 -n16 python pretrain_gpt.py",
    "mpirun -np 16 --map-by ppr:8:node:PE=4 python pretrain_gpt.py",
    "mpirun -np 16 --map-by socket python pretrain_gpt.py"])
def test_a_launcher_that_fills_the_nodes_runs(tmp_path, launcher):
    path = megatron_scenario(tmp_path, f"{launcher} {TINY_GPT_ARGS}", preset="dgx-h100", gpus=16)
    assert main(["run", path, "--quiet"]) == 0


# -- a process a link's watch() callback starts mid-run ----------------------------------------------

def _start_from_a_watcher(sim, every_ns: int, rounds: int) -> tuple[list, object]:
    """Start ``_polls`` from a ``watch("link_start", fn)`` on link 0 -> 1 (docs/cosimulation.md,
    "Elements can be watched directly"), at the first message on it; the list of its resumes,
    and the watcher."""
    from tests.test_extensions_round14 import _polls

    env, resumed = sim.env, []

    def started(_link, _key, _size_bytes):
        if not resumed:
            resumed.append(None)
            env.process(_polls(env, every_ns, rounds, resumed))

    sim.network.link(0, 1).watch("link_start", started)
    return resumed, started


def test_a_process_a_links_watcher_starts_that_polls_at_0_ns_is_stopped(monkeypatch):
    """As one a user's process or an ``on()`` callback starts (round 14): with the limit at 3 it
    is stopped after 3 resumes at the instant the ring's first message starts on link 0 -> 1,
    10 ns (the docs' ring sends after E = 10 ns). Before, it polled on unchecked (with a
    ``while True``, ``sim.run()`` never returned)."""
    from simpy_astra import plugins
    from simpy_astra.infra import zero_time
    from simpy_astra.simulation import Simulation
    from tests.test_extensions_round14 import COSIM_RING

    monkeypatch.setattr(zero_time, "ZERO_TIME_RESUMES", 3)
    sim = Simulation.from_scenario(str(COSIM_RING))
    _start_from_a_watcher(sim, 0, 10)
    with pytest.raises(plugins.PluginError, match="process '_polls' was resumed 3 times at 10 ns"):
        sim.run()


def test_a_process_a_links_watcher_starts_that_lets_time_pass_runs_on():
    """Every 1,000 ns it is left alone: the run ends at the docs' ring figure, 32,362 ns, and
    the watcher can still be unwatched by the function it was given."""
    from simpy_astra.simulation import Simulation
    from tests.test_extensions_round14 import COSIM_RING

    sim = Simulation.from_scenario(str(COSIM_RING))
    resumed, watcher = _start_from_a_watcher(sim, 1_000, 1_000)
    assert max(r.finished_ns for r in sim.run()) == 32_362
    assert [t for t in resumed if t is not None] == list(range(1_010, 32_362, 1_000))
    sim.network.link(0, 1).unwatch("link_start", watcher)
    assert sim.network.link(0, 1).probe_link_start is None


# -- a backend that posts from a process of its own ---------------------------------------------------

rv15 = module_fixture(Path(__file__).resolve().parent / "data" / "review15" / "rv15.py")


def test_a_backend_that_posts_each_message_from_its_own_process_runs(rv15):
    """Regression guard for the handed-send count moving from the message board into the system
    layer's view of a user's backend (one count for the post-twice check and the stall line):
    a backend whose ``send`` posts nothing, its own process posting each message in that
    instant, is not stopped, and its ring all-reduce of 4 KiB on 4 NPUs takes the native ring's
    time, E + 2 (n - 1) (d(S/n) + E) + (n - 1) P(S/n); so do two jobs' through one view."""
    path = _write(rv15, "own.yaml", _bench("all_reduce", 4096, 4), _net("Ring", 4), "'rv15:FROM_ITS_PROCESS'")
    assert f"iteration time {ring_all_reduce(4, 4096):,} ns" in _cli(rv15, "run", path.name, "--quiet").stdout
    path.write_text(f"{TWO_JOBS}system: {_system()}\nnetwork: {_net('Ring', 4)}\nbackend: 'rv15:FROM_ITS_PROCESS'\n")
    own = _cli(rv15, "run", path.name, "--quiet").stdout
    assert own == _cli(rv15, "run", path.name, "--quiet", "--network-backend", "congestion_unaware").stdout


def test_a_long_slurm_launch_line_is_read_as_a_launcher(tmp_path, capsys):
    """A Slurm line with a container's flags and torchrun's rendezvous puts 33 words before
    pretrain_gpt.py; only the first 32 words were searched for it, so the launcher was read as
    Megatron-LM's arguments and refused as 'a shell assignment'. It runs as the job's arguments
    alone do, and its torchrun, 2 x 8 GPUs, is held to the job's 16."""
    launcher = ("CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_DEBUG=WARN NCCL_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=8 srun -N 2 "
                "--ntasks-per-node 1 --gpus-per-node 8 --cpus-per-task 32 --mpi pmix --container-image "
                "nvcr.io/nvidia/pytorch:24.01-py3 --container-mounts /data:/data torchrun --nproc_per_node 8 "
                "--nnodes 2 --rdzv_id 1 --rdzv_backend c10d --rdzv_endpoint h:29500 --max_restarts 0 "
                "/workspace/Megatron-LM/pretrain_gpt.py")
    assert launcher.split().index("/workspace/Megatron-LM/pretrain_gpt.py") == 32  # its 33rd word
    pasted, alone = launched_as_alone(tmp_path, capsys, launcher)
    assert pasted == alone
    eight = megatron_scenario(tmp_path, f"{launcher} {TINY_GPT_ARGS}", "c.yaml", preset="dgx-h100", gpus=8)
    assert error_lines(capsys, ["run", eight, "--quiet"])[0].startswith(
        f"error: {eight}: workload.args: the pasted launcher starts 16 GPUs (--nproc_per_node 8 x --nnodes 2)")
