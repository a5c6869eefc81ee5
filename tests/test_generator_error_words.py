"""A generator's errors and warnings in a scenario's words: spelt from their parts, never taken
apart by their text (a value that reads as a flag, ``--fc1``, is left as written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simpy_astra.cli.main import main
from simpy_astra.errors import InputError
from simpy_astra.workloads.generated import (
    GENERATORS,
    GeneratorEntry,
    Prepared,
    WorkloadLayout,
    materialise,
    register,
)

WHERE = "s.yaml: workload"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))


def _refused(spec: dict, where: str = WHERE) -> str:
    with pytest.raises(InputError) as caught:
        materialise(spec, where=where)
    return caught.value.message


def _gemm(tmp_path: Path, csv: str, **params: object) -> dict:
    (tmp_path / "layers.csv").write_text(csv)
    return {"generate": "gemm", "mnk": str(tmp_path / "layers.csv"), "parallel": "DATA", "num_npus": 4, **params}


def test_a_gemm_clock_is_named_as_its_field_as_every_other_parameter_is(tmp_path, capsys):
    # was 's.yaml: workload: clock_ghz: ...', beside 's.yaml: workload.num_npus: ...' for the others;
    # and it was checked only after SCALE-Sim had timed every layer
    spec = _gemm(tmp_path, "Layer,m,n,k\nfc1,64,64,64\n", clock_ghz=float("nan"))
    assert _refused(spec).startswith(f"{WHERE}.clock_ghz: must be a clock in GHz from 0.001 to 1000 (got nan)")
    assert main(["generate", "gemm", "--mnk", spec["mnk"], "--parallel", "DATA", "--num-npus", "4",
                 "--clock-ghz", "inf", "--output", str(tmp_path / "g")]) == 2
    assert "error: --clock-ghz: must be a clock in GHz" in capsys.readouterr().err


@pytest.mark.parametrize("csv, words", [
    # a line of the m,n,k file names that file: shown as written ('--fc1' was 'workload.fc1')
    ("Layer,m,n,k\n--fc1,0,64,64\n", "layers.csv:2: m, n and k of layer '--fc1' must be >= 1"),
    ("Layer,m,n,k\n--fc1,x,64,64\n", "layers.csv:2: m, n and k of layer '--fc1' must be integers"),
])
def test_an_mnk_file_error_is_shown_as_written(tmp_path, csv, words):
    message = _refused(_gemm(tmp_path, csv))
    assert message == f"{tmp_path / words}", message


def test_a_gemm_layer_that_cannot_be_split_is_named_as_written(tmp_path):
    # 1 row of m over 4 NPUs leaves an empty shard: was 'layer workload.fc1: m=1, ...'
    message = _refused(_gemm(tmp_path, "Layer,m,n,k\n--fc1,1,64,64\n"))
    assert message == f"{WHERE}: layer --fc1: m=1, n=64 leave an empty shard under DATA on 4 NPUs (1 packages)"


def test_a_cache_folder_that_cannot_be_written_is_named_as_written(tmp_path, monkeypatch):
    # SIMPY_ASTRA_CACHE is a file: its path was reworded ('c--x' read as the flag --x)
    (tmp_path / "c--x").write_text("")
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "c--x"))
    message = _refused({"generate": "microbench", "collective": "all_reduce", "size": 64, "num_npus": 2})
    assert message.startswith(f"{WHERE}: workload cache {tmp_path / 'c--x' / 'workloads'}: cannot write ("), message


def test_a_corrupt_cache_entry_names_its_file_as_written(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "c--x"))
    spec = {"generate": "microbench", "collective": "all_reduce", "size": 64, "num_npus": 2}
    done = Path(materialise(spec, where=WHERE).prefix).parent / "done.json"
    done.write_text(json.dumps({"comm_groups": 5}))
    assert _refused(spec).startswith(f"{done}: comm_groups: corrupt workload cache entry (ValueError: ")


def _users(params: dict, prefix: str) -> None:
    raise InputError(f"'stages' must be 2 or more (got {params['stages']}); see --help")


@pytest.fixture
def users_generator():
    register("users_words", _users)
    yield "users_words"
    GENERATORS.pop("users_words")


def test_a_users_generators_error_is_shown_as_its_author_wrote_it(users_generator):
    # was 's.yaml: workload.stages: must be 2 or more (got 1); see workload.help', words it never wrote
    message = _refused({"generate": users_generator, "stages": 1})
    assert message == f"{WHERE}.generate: 'stages' must be 2 or more (got 1); see --help"


def test_a_warning_written_whole_is_shown_as_written(monkeypatch):
    # a line that names its place (as Megatron's name workload.args) is never reworded: '--fast'
    # here is not a parameter of the workload
    line = "workload: --fast changes nothing"
    entry = GeneratorEntry(lambda job, prefix: None, "1", layout=lambda job: WorkloadLayout(warnings=(line,)))
    monkeypatch.setitem(GENERATORS, "whole_lines", entry)
    assert Prepared("whole_lines", {}, {}, WHERE).layout().warnings == (line,)


def test_the_kvhead_warning_is_spelt_from_its_parts():
    params = {"model": "gpt", "head": 4, "kvhead": 1, "dmodel": 64, "dff": 64, "num_stacks": 1, "dp": 2, "batch": 2}
    for where in (WHERE, "workload"):
        (line,) = Prepared("transformer", params, params, where).layout().warnings
        assert line.startswith(f"{where}.kvhead: (1) changes nothing: a gpt model"), line
        assert "; use workload.model llama for grouped-query attention, or remove kvhead" in line
    (parts,) = GENERATORS["transformer"].layout(params).warnings
    assert not isinstance(parts, str)  # a scenario spells it from its parts, not from its text


def test_traces_the_cache_cannot_take_are_the_caches_to_mend(monkeypatch):
    # a full disk under the cache was 's.yaml: workload.output: cannot write ...', a field that
    # does not exist; the command line's --output is, in a scenario, the workload cache
    def full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("simpy_astra.workloads.microbench.write_et", full)
    message = _refused({"generate": "microbench", "collective": "all_reduce", "size": 64, "num_npus": 2})
    assert message.startswith(f"{WHERE}: workload cache "), message
    assert message.endswith("(No space left on device); set SIMPY_ASTRA_CACHE to a folder you can write, with "
                            "space for the traces"), message
