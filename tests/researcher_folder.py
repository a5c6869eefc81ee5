"""A folder of a researcher's own modules for the extension tests: written, made the working
directory and importable, with every registry a plug-in may fill put back as it was found."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def researcher_folder(folder: Path, monkeypatch, modules: dict[str, str]) -> Iterator[Path]:
    """``modules`` (name -> source) written as ``folder/NAME.py``; ``folder`` the working
    directory, first on ``sys.path``, with its own trace cache and no progress lines."""
    from simpy_astra import collectives, topologies
    from simpy_astra.network import models
    from simpy_astra.network.backends import BACKENDS
    from simpy_astra.workloads import generated
    from simpy_astra.workloads.schedules import registry as schedules

    registries = (BACKENDS, generated.GENERATORS, collectives.REGISTRY, topologies.REGISTRY, models.LINKS,
                  models.SWITCHES, schedules.SCHEDULES)
    before = [set(registry) for registry in registries]
    for name, source in modules.items():
        sys.modules.pop(name, None)
        (folder / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.chdir(folder)
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(folder / ".cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")
    try:
        yield folder
    finally:
        for registry, names in zip(registries, before, strict=True):
            for name in set(registry) - names:
                registry.pop(name)
        for name in modules:
            sys.modules.pop(name, None)


def module_fixture(path: Path):  # noqa: ANN201 - a pytest fixture
    """A fixture giving a test a folder of the researcher's own that holds ``path`` (their
    module, by its own name) and is the working directory, registries left as found."""
    import pytest

    @pytest.fixture
    def folder(tmp_path: Path, monkeypatch) -> Iterator[Path]:
        with researcher_folder(tmp_path, monkeypatch, {path.stem: path.read_text()}) as made:
            yield made

    return folder
