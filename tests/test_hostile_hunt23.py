"""A twenty-third hunt: an environment variable as a script quotes it, NCCL's fitted keys a
preset's machine never reads, and Megatron-LM's newer flags in combinations. Each test failed
before its fix: a silent wrong run, a field ignored, or an error naming no fix."""

from __future__ import annotations

from simpy_astra.cli.main import main
from tests.scenario_files import megatron_scenario


def test_a_cache_path_quoted_with_its_tilde_goes_home(tmp_path, capsys, monkeypatch):
    # before: SIMPY_ASTRA_CACHE="~/cache" (quoted in a job script, so no shell expanded it)
    # made a folder named '~' in the working folder and cached the traces there
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", "~/cache")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert main(["run", megatron_scenario(tmp_path), "--quiet"]) == 0, capsys.readouterr().err
    assert (tmp_path / "home" / "cache" / "workloads").is_dir()
    assert not (tmp_path / "work" / "~").exists()
