"""A twenty-eighth hunt, second half: the leftovers of the first and the seams of round 14's
extensions. Each test failed before its fix: a wrong success, or a message naming no fix."""

from __future__ import annotations

import pytest

from simpy_astra.cli.main import main
from tests.scenario_files import TINY_GPT_ARGS, error_lines, megatron_scenario


@pytest.mark.parametrize(("launcher", "shown"), [
    ("mpirun -np 16 -N 4 python pretrain_gpt.py", "-np 16 x -N 4"),
    ("deepspeed --num_gpus 4 pretrain_gpt.py", "--num_gpus 4")])
def test_a_launchers_gpus_a_node_are_read_with_or_without_its_whole_count(tmp_path, capsys, launcher, shown):
    path = megatron_scenario(tmp_path, f"{launcher} {TINY_GPT_ARGS}", preset="dgx-h100", gpus=16)
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.args: the pasted launcher starts 4 GPUs a node ({shown}), but the cluster's nodes "
        f"hold 8; give cluster.gpus_per_node: 4, or drop the launcher's words"]


@pytest.mark.parametrize("launcher", ["mpirun -np 16 python pretrain_gpt.py", "srun -N 2 python pretrain_gpt.py",
                                      "deepspeed --num_gpus 8 pretrain_gpt.py",
                                      "srun -N2 -n16 python pretrain_gpt.py"])  # (hunt 29) joined counts
def test_a_launcher_agreeing_with_the_job_runs(tmp_path, launcher):
    assert main(["run", megatron_scenario(tmp_path, f"{launcher} {TINY_GPT_ARGS}", preset="dgx-h100", gpus=16),
                 "--quiet"]) == 0


@pytest.mark.parametrize(("field", "value"), [("gpus", "'16'"), ("gpus", '"16"'), ("inter_node_gbit_s", "'400'")])
def test_a_quoted_number_is_told_to_lose_its_quotes(tmp_path, capsys, field, value):
    # before: "cluster.gpus: must be a positive integer (got '16')", no fix named
    path = tmp_path / "s.yaml"
    other = "" if field == "gpus" else ", gpus: 16"
    path.write_text(f"workload: {{generate: megatron, args: '{TINY_GPT_ARGS}'}}\n"
                    f"cluster: {{preset: dgx-h100, {field}: {value}{other}}}\n")
    number = value.strip("'\"")
    assert error_lines(capsys, ["run", str(path), "--quiet"])[-1].endswith(
        f"(got '{number}'); write {number} without quotes (in quotes, YAML reads it as text)")


# -- a backend from an installed package's entry point ------------------------------------------------

def _site(folder, packages: dict[str, str]):
    """A folder for PYTHONPATH holding installed packages (name -> their entry_points.txt)."""
    for name, declared in packages.items():
        info = folder / "site" / f"{name}-0.1.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(declared)
    return folder / "site"


def _loggp_ring(folder):
    from pathlib import Path

    examples = Path(__file__).resolve().parent.parent / "examples"
    (folder / "loggp.py").write_text((examples / "loggp.py").read_text())
    (folder / "other.py").write_text("import loggp\nfrom simpy_astra.network.backends import BackendSpec\n"
                                     "SLOW = BackendSpec('slow', 'x', loggp.LOGGP.build, folds=None, folded=None)\n"
                                     "WRONG = BackendSpec('wrong', 'x', lambda env: None, folds=None, folded=None)\n")
    (folder / "ring8.yaml").write_text((examples / "loggp_ring.yaml").read_text().replace("plugins: [loggp]\n", ""))


def test_a_backend_name_two_packages_declare_is_refused_naming_both(tmp_path):
    # before: the package read last on sys.path ran, in silence (for every entry-point group)
    from tests.test_extensions_round6 import _cli
    from tests.test_extensions_round9 import _one_line

    _loggp_ring(tmp_path)
    site = _site(tmp_path, {"pkga": "[simpy_astra.backends]\nloggp = loggp:LOGGP\n",
                            "pkgb": "[simpy_astra.backends]\nloggp = other:SLOW\n"})
    assert _one_line(_cli(tmp_path, "run", "ring8.yaml", "--quiet", status=2, path=site)) == (
        "error: ring8.yaml: field 'backend': entry point 'loggp' of simpy_astra.backends is declared by pkga "
        "(loggp:LOGGP) and pkgb (other:SLOW): which runs would depend on the order of sys.path; uninstall one, or "
        "name it as module:attribute in the config")
    (site / "pkgb-0.1.dist-info" / "entry_points.txt").write_text("[simpy_astra.backends]\nloggp = loggp:LOGGP\n")
    assert "iteration time 49,724 ns" in _cli(tmp_path, "run", "ring8.yaml", "--quiet", path=site).stdout


def test_an_entry_points_backend_of_the_wrong_shape_is_named_once(tmp_path):
    # before: "network backend 'loggp': network backend 'wrong': build(env) cannot be called ..."
    from tests.test_extensions_round6 import _cli
    from tests.test_extensions_round9 import _one_line

    _loggp_ring(tmp_path)
    site = _site(tmp_path, {"pkga": "[simpy_astra.backends]\nloggp = other:WRONG\n"})
    assert _one_line(_cli(tmp_path, "run", "ring8.yaml", "--quiet", status=2, path=site)) == (
        "error: ring8.yaml: field 'backend': network backend 'loggp' (BackendSpec 'wrong'): build(env) cannot be "
        "called as build(env, dims, source, config=None) (docs/backends.md)")


# -- a stall under jobs: every NPU named by its physical id ------------------------------------------

DROPS = """from simpy_astra.network.backends import BackendSpec
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork


class Drops(CongestionUnawareNetwork):
    pair_delays_only = False

    def send(self, src, dst, tag, size, fn, arg):
        pass


DROPS = BackendSpec("drops", "x", lambda env, dims, source, config=None: Drops(env, dims), folds=None, folded=None)
"""


def test_a_stall_under_jobs_names_each_waiting_phase_by_its_physical_npu(tmp_path):
    # before: job a on NPUs [1, 3] said "NPU 0 all_reduce phase ... waits for 2048 B from NPU 3"
    # and "NPU 1 ... from NPU 1": the receiving phase by its rank in the job, its sender by its
    # physical NPU, so NPU 0 (job b's) seemed to wait on job a's NPU 3
    from tests.test_extensions_round6 import _cli, _system
    from tests.test_extensions_round7 import _net
    from tests.test_extensions_round9 import _one_line
    from tests.test_extensions_round14 import TWO_JOBS

    (tmp_path / "drops.py").write_text(DROPS)
    (tmp_path / "s.yaml").write_text(f"{TWO_JOBS}system: {_system()}\nnetwork: {_net('Ring', 4)}\n"
                                     f"backend: 'drops:DROPS'\n")
    line = _one_line(_cli(tmp_path, "run", "s.yaml", "--quiet", status=3, path=tmp_path))
    waits = [part.split(" all_reduce phase")[0] + " <- " + part.split(" B from ")[1].split(" with")[0]
             for part in line.split("Unmatched messages: ")[1].split("; ")]
    # job a on NPUs 1 and 3, job b on 0 and 2: each waits on the other NPU of its own job
    assert waits == ["NPU 0 <- NPU 2", "NPU 1 <- NPU 3", "NPU 2 <- NPU 0", "NPU 3 <- NPU 1"], line


@pytest.mark.parametrize("jobs", [False, True], ids=["one job", "two jobs"])
def test_a_backend_whose_send_posts_nothing_is_named_at_the_stall(tmp_path, jobs):
    # before: the stall said each receive waits on a message "which NPU 2 never sent", and named
    # no backend: NPU 2 had sent it, and the backend's send() dropped it
    from tests.test_extensions_round6 import _cli, _system
    from tests.test_extensions_round7 import _bench, _net
    from tests.test_extensions_round9 import _one_line
    from tests.test_extensions_round14 import TWO_JOBS

    (tmp_path / "drops.py").write_text(DROPS)
    work = TWO_JOBS if jobs else f"workload: {_bench('all_reduce', 4096, 4)}\n"
    (tmp_path / "s.yaml").write_text(f"{work}system: {_system()}\nnetwork: {_net('Ring', 4)}\nbackend: 'drops:DROPS'\n")
    line = _one_line(_cli(tmp_path, "run", "s.yaml", "--quiet", status=3, path=tmp_path))
    assert line.endswith(". The sends were given to the network, but network backend 'drops:Drops' was handed 4 "
                         "sends and posted 0 of them: its send() must post each message with self.board.post_send "
                         "(now, or later from a queue of its own), or its receive waits for ever"), line


# -- a sweep's null on a job's key ----------------------------------------------------------------------

def test_null_on_a_jobs_key_in_a_sweep_leaves_the_key_out(tmp_path, capsys):
    # before: every null point failed, "jobs[1].start_ns: is empty ...; give one, or remove
    # start_ns", though the sweep's own words promise "[null] for one point that leaves the field
    # out", as a cluster axis's null and a generator parameter's do
    import csv

    from tests.test_extensions_round6 import _system
    from tests.test_extensions_round7 import _net
    from tests.test_extensions_round14 import TWO_JOBS

    (tmp_path / "base.yaml").write_text(f"{TWO_JOBS}system: {_system()}\nnetwork: {_net('Ring', 4)}\n")
    (tmp_path / "sweep.yaml").write_text("base: base.yaml\naxes:\n  jobs.1.start_ns: [null, 1000]\n")
    assert main(["run", str(tmp_path / "base.yaml"), "--quiet"]) == 0
    alone_ns = int(capsys.readouterr().out.split()[2].replace(",", ""))
    assert main(["sweep", str(tmp_path / "sweep.yaml"), "--out", str(tmp_path / "out")]) == 0
    with open(tmp_path / "out" / "results.csv", newline="") as f:
        rows = {row["jobs.1.start_ns"]: row for row in csv.DictReader(f)}
    # no shared links (congestion_unaware): job b started 1,000 ns later ends 1,000 ns later
    assert {start: (row["status"], int(row["finish_ns"])) for start, row in rows.items()} == {
        "null": ("ok", alone_ns), "1000": ("ok", alone_ns + 1000)}
