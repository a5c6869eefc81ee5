"""Scenarios that name a generator: generated once, cached by parameters, errors name the field."""

from __future__ import annotations

import glob
import shutil
from pathlib import Path

import pytest
import yaml

from simpy_astra.config.scenario import load_scenario
from simpy_astra.errors import InputError
from simpy_astra.workloads import generated, trace_cache

ROOT = Path(__file__).resolve().parents[1]
STEP = ROOT / "scenarios" / "workloads" / "step_8npus_1MB" / "step"


@pytest.fixture()
def copying_generator(monkeypatch, tmp_path):
    """A generator that copies the default scenario's traces and counts its calls."""
    calls: list[dict] = []

    def copy_step(params: dict, prefix: str) -> None:
        calls.append(params)
        for src in glob.glob(f"{STEP}.*.et"):
            shutil.copy(src, prefix + src[len(str(STEP)):])

    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(generated.GENERATORS, "copy", generated.GeneratorEntry(copy_step, "1"))
    return calls


def _scenario(tmp_path: Path, workload) -> str:
    doc = yaml.safe_load((ROOT / "scenarios" / "default.yaml").read_text())
    doc["workload"] = workload
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_generated_once_per_parameters_and_run(copying_generator, tmp_path):
    from simpy_astra.simulation import Simulation

    first = load_scenario(_scenario(tmp_path, {"generate": "copy", "size": 1}))
    again = load_scenario(_scenario(tmp_path, {"size": 1, "generate": "copy"}))
    other = load_scenario(_scenario(tmp_path, {"generate": "copy", "size": 2}))
    assert copying_generator == [{"size": 1}, {"size": 2}]
    assert first.workload_prefix == again.workload_prefix != other.workload_prefix
    reports = Simulation(first).run()
    assert [r.finished_cycles for r in reports] == [142780] * 8  # the default scenario's figure


def test_a_change_to_the_generators_code_is_a_new_cache_folder(copying_generator, tmp_path, monkeypatch):
    """A trace cached by one version of the generators' code is never read by another, even
    when the change forgot its generator's version bump: the cache is keyed by a hash of
    every ``.py`` file of the package (its path and content)."""
    code = tmp_path / "code"
    (code / "sub").mkdir(parents=True)
    (code / "sub" / "layers.py").write_text("BYTES = 12\n")
    (code / "notes.txt").write_text("not code")
    before = generated.folder_digest(code)
    (code / "notes.txt").write_text("still not code")
    assert generated.folder_digest(code) == before
    (code / "sub" / "layers.py").write_text("BYTES = 36\n")
    edited = generated.folder_digest(code)
    (code / "sub" / "layers.py").rename(code / "layers.py")
    assert len({before, edited, generated.folder_digest(code)}) == 3

    first = load_scenario(_scenario(tmp_path, {"generate": "copy", "size": 1})).workload_prefix
    monkeypatch.setattr(trace_cache, "code_digest", lambda: "another version")
    second = load_scenario(_scenario(tmp_path, {"generate": "copy", "size": 1})).workload_prefix
    assert first != second and copying_generator == [{"size": 1}, {"size": 1}]


def test_unknown_generator_is_an_input_error(copying_generator, tmp_path):
    with pytest.raises(InputError, match=r"workload\.generate: must name a generator, one of .*copy.*\(got 'nope'\)"):
        load_scenario(_scenario(tmp_path, {"generate": "nope"}))
    with pytest.raises(InputError, match="needs 'generate: NAME'"):
        load_scenario(_scenario(tmp_path, {"preset": "x"}))


@pytest.mark.parametrize("workload, cluster, words", [
    ({"generate": "microbench", "collective": "all_reduce", "size": 1024, "num_npus": 16}, False,
     ("writes 16 ranks", "network has 8 NPUs")),
    ({"generate": "microbench", "collective": "all_reduce", "size": 1024, "num_npus": 16}, True,
     ("writes 16 ranks", "cluster.gpus is 8")),
    ({"generate": "transformer", "preset": "llama2-7b", "dp": 2, "num_stacks": 1}, True,
     ("writes 2 ranks", "cluster.gpus is 8")),
])
def test_a_generated_workload_of_another_size_than_the_network_names_the_scenario(
        tmp_path, capsys, monkeypatch, workload, cluster, words):
    """The error named a file in the workload cache (and told the user to delete cache files
    'or change npus_count'), not the scenario field that sets the size."""
    path, err = _refused(tmp_path, capsys, monkeypatch, workload, cluster)
    assert len(err) == 1 and err[0].startswith(f"error: {path}: workload: generate {workload['generate']} "), err
    assert str(tmp_path / "cache") not in err[0]
    for word in words:
        assert word in err[0], (word, err[0])


def _refused(tmp_path, capsys, monkeypatch, workload: dict, cluster: bool) -> tuple[str, list[str]]:
    """Run a scenario of ``workload`` (beside an 8-GPU cluster when ``cluster``), which must be
    refused (exit 2): its path and the lines it printed on stderr."""
    from simpy_astra.cli.main import main

    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    path = _scenario(tmp_path, workload)
    if cluster:
        Path(path).write_text(yaml.safe_dump({"workload": workload,
                                              "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}}))
    assert main(["run", path, "--quiet"]) == 2
    return path, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("cluster", [False, True])
def test_a_generators_parameter_error_names_the_scenario(tmp_path, capsys, monkeypatch, cluster):
    """The transformer generator's layout read its parameters and its error came out bare
    ('error: workload: generate: transformer: unknown parameter(s) ...'), naming no file."""
    workload = {"generate": "transformer", "preset": "llama2-7b", "dp": 8, "layerz": 1}
    path, err = _refused(tmp_path, capsys, monkeypatch, workload, cluster)
    assert len(err) == 1 and err[0].startswith(f"error: {path}: workload"), err
    assert "layerz" in err[0]


def test_a_corrupt_trace_in_the_workload_cache_says_to_delete_its_entry(tmp_path, capsys, monkeypatch):
    """The error named the cached ET file and what was wrong with it, but not that it is the
    cache's (the user never wrote it) nor the fix: delete the entry, it is generated again."""
    from simpy_astra.cli.main import main

    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    path = _scenario(tmp_path, {"generate": "microbench", "collective": "all_reduce", "size": 1024, "num_npus": 8})
    assert main(["run", path, "--quiet"]) == 0
    (rank,) = glob.glob(str(tmp_path / "cache" / "workloads" / "*" / "microbench.3.et"))
    Path(rank).write_bytes(Path(rank).read_bytes()[:20])
    assert main(["run", path, "--quiet", "--fold-symmetry", "off"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {rank}: "), err
    assert f"workload cache entry: delete {Path(rank).parent} to generate it again" in err[0]


def test_a_stage_node_record_is_the_bytes_protobuf_writes_for_the_whole_node():
    """Trace records are built as the node's head plus cached attribute records (concatenated
    messages merge; ``attr`` is a Node's last field): every record of a pipelined, tensor- and
    data-parallel Megatron stage (compute, collectives, sends, receives) must equal protobuf's
    own serialisation of the whole node, attributes in the same order."""
    from simpy_astra.config.cluster import load_cluster
    from simpy_astra.workloads.chakra.schema import Node
    from simpy_astra.workloads.megatron.arguments import parse
    from simpy_astra.workloads.megatron.schedule import build_stage
    from simpy_astra.workloads.transformer import writer

    job = parse("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
                "--global-batch-size 8 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --bf16 "
                "--sequence-parallel --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather", 8)
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "c").gpu_model()
    units = writer.Units(True)
    for stage in range(job.pp):
        graph = build_stage(job, gpu, stage)
        for i, op in enumerate(graph.ops):
            record = writer._node_bytes(op, i, units, graph.kinds)
            whole = Node.FromString(record)  # what a reader sees; written again in protobuf's order
            assert record == whole.SerializeToString(), (stage, op.name)
            assert (whole.id, whole.name, whole.type, list(whole.data_deps), whole.duration_micros) == (
                i, op.name, op.kind, list(op.deps), op.duration_us)
            attrs = [a.name for a in whole.attr]
            assert attrs[-2:] == ["inputs", "outputs"] and ("op_type" in attrs or "comm_size" in attrs)
