"""The package as users get it: a wheel, installed into a fresh venv, runs the default scenario.

Slow (about 30 s: the venv's dependencies come from the package index) but it is the only
check that the install is complete: every module inside ``simpy_astra`` and nothing else at
the top level of site-packages (``collectives``, ``topologies`` and ``workloads`` are folders
of the source tree installed as ``simpy_astra.collectives`` etc., see setup.cfg).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE_DIRS = ("simpy_astra", "collectives", "topologies", "workloads")


def _copy_source(dest: Path) -> None:
    """What a wheel is built from (no caches, tests or results)."""
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, dest / name)
    for folder in SOURCE_DIRS:
        shutil.copytree(ROOT / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def test_wheel_installs_into_a_fresh_venv_and_runs_the_default_scenario(tmp_path: Path) -> None:
    src, dist, venv, cwd = (tmp_path / d for d in ("src", "dist", "venv", "elsewhere"))
    for d in (src, dist, cwd):
        d.mkdir()
    _copy_source(src)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)],
                   check=True, env=env, timeout=600)
    (wheel,) = dist.glob("simpy_astra-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {"simpy_astra", wheel.name.split("-py")[0] + ".dist-info"}, top
    # every module of the source folders is in the wheel, under simpy_astra/
    for folder in SOURCE_DIRS:
        inside = "simpy_astra" if folder == "simpy_astra" else f"simpy_astra/{folder}"
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder).as_posix()
            assert f"{inside}/{rel}" in names, f"{folder}/{rel} is not in the wheel"

    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True, env=env, timeout=900)
    done = subprocess.run([str(python), "-m", "simpy_astra", str(ROOT / "scenarios" / "default.yaml"), "--quiet"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "sys[7] finished, 142780 cycles, exposed communication 117780 cycles." in done.stdout
    where = subprocess.run([str(python), "-c", "import simpy_astra.workloads, sys; print(simpy_astra.workloads.__file__);"
                            "import importlib.util as u; print([m for m in ('collectives', 'topologies', "
                            "'workloads') if u.find_spec(m)])"],
                           cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=True)
    file, leaked = where.stdout.splitlines()
    assert str(venv) in file
    assert leaked == "[]"  # no generic top-level package was installed
