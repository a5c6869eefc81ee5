"""Shared fixtures: where the ASTRA-sim reference data lives; registries restored after each test."""

from __future__ import annotations

from pathlib import Path

import pytest

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    if not (REFERENCE / "cases").is_dir():
        pytest.skip(f"reference data not found at {REFERENCE} (clone the project next to ../shared)")
    return REFERENCE


@pytest.fixture(autouse=True)
def _registries_restored():
    """Algorithms and topologies a test registers (plugins, ``pkg.mod:name`` configs, which
    register what they load) are gone after it: no test sees another's registrations."""
    from simpy_astra import collectives, topologies

    saved = dict(collectives.REGISTRY), dict(topologies.REGISTRY)
    yield
    for registry, before in zip((collectives.REGISTRY, topologies.REGISTRY), saved, strict=True):
        registry.clear()
        registry.update(before)


@pytest.fixture
def own_cache(monkeypatch, tmp_path):
    """A test's own workload cache (so no test reads another's entries) and no ``COLUMNS``
    from the shell (so the console is laid out for 80 columns, as in a pipe)."""
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("COLUMNS", raising=False)



@pytest.fixture(autouse=True)
def _stop_signals_restored():
    """SIGINT's and SIGTERM's handlers as they were before each test, for tests that set
    Python's own Ctrl-C handler (a shell's background job, as CI runs, starts with SIGINT
    ignored, and a sweep rightly leaves an ignored signal ignored)."""
    import signal

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)
