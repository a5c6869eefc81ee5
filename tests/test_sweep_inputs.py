"""A sweep sees what it ran on: an input edited while the points run stops the sweep, naming
the file, before a row made from other contents is saved beside the earlier ones."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "scenarios" / "default.yaml"
STEP = ROOT / "scenarios" / "workloads" / "step_8npus_1MB" / "step"

#: a generator that, in point 2, edits the sweep's network file (as a user might mid-sweep)
EDITING_PLUGIN = textwrap.dedent('''
    import glob, shutil
    from simpy_astra.workloads import generated

    def _generate(params, prefix):
        if params["n"] == 2:
            with open(params["net"], "a") as f:
                f.write("# edited while the sweep ran\\n")
        for src in glob.glob({step!r} + ".*.et"):
            shutil.copy(src, prefix + src[len({step!r}):])

    generated.GENERATORS["editing"] = generated.GeneratorEntry(_generate, "1")
''')


def test_an_input_edited_mid_sweep_stops_it_naming_the_file(tmp_path):
    (tmp_path / "plug").mkdir()
    (tmp_path / "plug" / "editing_plugin.py").write_text(EDITING_PLUGIN.format(step=str(STEP)))
    base = yaml.safe_load(DEFAULT.read_text())
    net = tmp_path / "net.yml"
    net.write_text(yaml.safe_dump(base.pop("network")))
    base.update(network=str(net), plugins=["editing_plugin"],
                workload={"generate": "editing", "n": 0, "net": str(net)})
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": base, "axes": {"workload.n": [1, 2, 3, 4]}}))
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path / "plug")]),
           "SIMPY_ASTRA_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "sweep", str(sweep), "--out", str(out),
                           "--jobs", "1", "--no-plots"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "net.yml: changed while the sweep ran" in errors[0], done.stderr
    rows = (out / "results.csv").read_text().splitlines()
    assert len(rows) == 2  # the header and point 1: point 2 ran on the edited file and is not saved
