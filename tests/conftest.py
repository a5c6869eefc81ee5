"""Shared fixtures: where the ASTRA-sim reference data lives."""

from __future__ import annotations

from pathlib import Path

import pytest

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    if not (REFERENCE / "cases").is_dir():
        pytest.skip(f"reference data not found at {REFERENCE} (clone the project next to ../shared)")
    return REFERENCE
