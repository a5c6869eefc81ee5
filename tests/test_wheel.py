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
    done = subprocess.run([str(python), "-m", "simpy_astra", str(ROOT / "scenarios" / "default.yaml"),
                           "--reference-lines", "--quiet"],
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


def test_the_installs_own_dependencies_run_sweep_and_validate(tmp_path: Path) -> None:
    """``pip install`` without extras (the README's first command) gives a working ``sweep``
    (simpleeval is a core dependency) and ``validate``: without matplotlib both do what needs
    no plot and say what they skipped (issue 39: sweep refused, validate refused)."""
    src, dist, venv, cwd = (tmp_path / d for d in ("src", "dist", "venv", "elsewhere"))
    for d in (src, dist, cwd):
        d.mkdir()
    _copy_source(src)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)],
                   check=True, env=env, timeout=600)
    (wheel,) = dist.glob("simpy_astra-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True, env=env, timeout=900)
    has = subprocess.run([str(python), "-c", "import importlib.util as u; print(bool(u.find_spec('matplotlib')))"],
                         env=env, capture_output=True, text=True, check=True).stdout.strip()

    def simpy_astra(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(python), "-m", "simpy_astra", *argv], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=600)

    listed = simpy_astra("sweep", str(ROOT / "scenarios" / "sweeps" / "quick.yaml"), "--list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0] == "36 points"  # 3 bandwidths x 3 algorithms x 2 chunkings x 2 backends
    (cwd / "bw.yaml").write_text(f"base: {ROOT / 'scenarios' / 'default.yaml'}\naxes:\n  network.bandwidth: [50, 100]\n")
    swept = simpy_astra("sweep", "bw.yaml", "--out", "runs", "--jobs", "1")
    assert swept.returncode == 0, swept.stderr
    assert "142,780" in swept.stderr  # the default scenario at 50 GB/s, as the reference
    assert (cwd / "runs" / "best.json").exists()
    a100 = ROOT / "tests" / "data" / "nccl" / "dgx-a100-superbench"
    (cwd / "system.json").write_text('{"preferred-dataset-splits": 1, "all-reduce-implementation": ["ring"]}')
    checked = simpy_astra("validate", str(a100 / "all_reduce.log"), "--network", str(a100 / "network.yml"),
                          "--system", "system.json", "--out", "val")
    assert checked.returncode == 0, checked.stderr
    assert (cwd / "val" / "validate.csv").exists() and (cwd / "val" / "validate.json").exists()
    if has == "False":  # matplotlib is an extra: what was skipped is said
        assert "skipped the plots: matplotlib is not installed" in swept.stderr
        assert not list((cwd / "runs").glob("*.png"))
        assert "skipped validate.png" in checked.stdout and not (cwd / "val" / "validate.png").exists()
