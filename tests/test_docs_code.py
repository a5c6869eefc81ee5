"""Every code block the README and the guides show runs, or is what the file it names holds.

``test_docs.py`` runs the shell commands; this runs the rest, as a reader would use it:

* each ``python`` block is imported as a module of its own, in a fresh interpreter in the
  checkout (so ``examples/...`` paths resolve as the docs write them), and then every
  extension it defines is run on a small scenario: a topology class, a link or switch model,
  a collective algorithm, a workload generator, a network backend it registers;
* a ``python`` block that the sentences before it say comes from a file of the checkout
  (``examples/my_algos.py``) must be in that file, line for line;
* ``yaml``, ``json`` and ``toml`` blocks parse (a JSON fragment of a system file parses as the
  members of an object), and a complete network YAML runs an all-reduce;
* a recipe runs outside the checkout, as a reader copies it: every block the prose names as a
  file of the reader's own (``examples/loggp.py``, ``examples/loggp_ring.yaml``) is written at
  that path into an empty folder, and every command the pages show that names only such files
  (``python -m simpy_astra run examples/loggp_ring.yaml``) runs there, in the README's fresh
  install, and prints the output the page quotes after it (``test_docs.py``). Python blocks
  are imported in such a folder too.
"""

from __future__ import annotations

import ast
import copy
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "collectives" / "README.md",
         ROOT / "simpy_astra" / "network" / "README.md"]
#: a file of the checkout named in the prose just before a block
NAMED_FILE = re.compile(r"`((?:examples|collectives|topologies|simpy_astra|workloads)/[\w/]+\.py)`")


def blocks(page: Path) -> list[tuple[int, str, str, str]]:
    """(line, language, code, the prose just before) of every fenced block of ``page``."""
    out = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        opening = lines[i].strip()
        if opening.startswith("```") and len(opening) > 3:
            language, start = opening[3:].strip(), i
            indent = len(lines[i]) - len(lines[i].lstrip())
            body = []
            i += 1
            while not lines[i].strip().startswith("```"):
                body.append(lines[i][indent:])
                i += 1
            before = " ".join(lines[max(0, start - 4):start])
            out.append((start + 1, language, "\n".join(body) + "\n", before))
        i += 1
    return out


ALL = [(page, *block) for page in PAGES for block in blocks(page)]


def ids(kind: str) -> list:
    return [pytest.param(page, line, code, before, id=f"{page.relative_to(ROOT)}:{line}")
            for page, line, language, code, before in ALL if language == kind]


#: a block the prose just before names as a file of the reader's own: ``examples/NAME.ext`` or a
#: bare ``NAME.ext`` (a file of the package, ``collectives/ring.py``, is quoted, not the reader's)
RECIPE_FILE = re.compile(r"`((?:examples/)?[\w-]+\.(py|yaml|yml|json))`")
SUFFIXES = {"python": ("py",), "yaml": ("yaml", "yml"), "json": ("json",)}


def recipe_files() -> dict[str, str]:
    """Path -> text of every block shown as a file of the reader's (the last name of its kind
    in the prose before it); a path shown on two pages must hold the same text on both."""
    files: dict[str, str] = {}
    for page, line, language, code, before in ALL:
        names = [name for name, suffix in RECIPE_FILE.findall(before) if suffix in SUFFIXES.get(language, ())]
        if names:
            assert files.setdefault(names[-1], code) == code, f"{page.name}:{line}: {names[-1]} shown differently"
    return files


def write_recipe_files(folder: Path) -> None:
    for name, text in recipe_files().items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def page_commands(page: Path) -> list[tuple[int, str, list[str]]]:
    """(line, command, what the page quotes it prints) of every ``python ...`` command of
    ``page``: an indented line outside a fenced block (continuations joined; quoted: the
    untyped fenced block right after it) or a code span (quoted: the span after "prints")."""
    out = []
    lines = page.read_text().splitlines()
    fenced = False
    for i, text in enumerate(lines):
        if text.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or not text.lstrip().startswith("python ") or len(text) - len(text.lstrip()) < 4:
            continue
        command, j = text.strip(), i
        while command.endswith("\\") and j + 1 < len(lines):
            j += 1
            command = command[:-1].rstrip() + " " + lines[j].strip()
        after = [ln for ln in lines[j + 1:j + 4] if ln.strip()]
        quoted: list[str] = []
        if after and after[0].strip() == "```":
            start, indent = lines.index(after[0], j + 1) + 1, len(after[0]) - len(after[0].lstrip())
            end = next(k for k in range(start, len(lines)) if lines[k].strip().startswith("```"))
            quoted = [ln[indent:] for ln in lines[start:end]]
        out.append((i + 1, re.sub(r"\s+#.*$", "", command), quoted))
    prose = " ".join(re.sub(r"^\s*```.*?^\s*```", "", page.read_text(), flags=re.M | re.S).split())
    for m in re.finditer(r"`(python [^`]+)`(?: prints `([^`]+)`)?", prose):
        line = next((i + 1 for i, text in enumerate(lines) if m.group(1)[:30] in " ".join(text.split())), 0)
        out.append((line, m.group(1), [m.group(2)] if m.group(2) else []))
    return out


def recipes() -> list:
    """Every command of the pages that names files, each of them one the pages show."""
    files = recipe_files()
    found = []
    for page in PAGES:
        for line, command, quoted in page_commands(page):
            named = [w for w in command.split()[1:] if re.search(r"\.(py|ya?ml|json)$", w) and not w.startswith("-")]
            synopsis = re.search(r"\[|\.\.\.|\*| \| |<", command)  # placeholders: checked against --help
            if named and all(w in files for w in named) and not synopsis:
                found.append(pytest.param(command, quoted, id=f"{page.relative_to(ROOT)}:{line}"))
    return found


def test_every_file_a_page_shows_is_used_and_a_copy_of_the_checkouts():
    """A file shown as the reader's is named by a recipe command or by another file shown
    (a module by the scenario that names it), and one of ``examples/`` is that file (the
    Python ones statement by statement, below)."""
    files = recipe_files()
    assert len(files) >= 6
    commands = " ".join(command for command, _ in (p.values for p in recipes()))
    for name, text in files.items():
        stem = Path(name).stem
        used = name in commands or any(o != name and re.search(rf"\b{re.escape(stem)}\b", t) for o, t in files.items())
        assert used, f"{name} is shown as a file of one's own, but nothing the pages run names it"
        if name.endswith((".yaml", ".yml")) and (ROOT / name).is_file():
            assert yaml.safe_load(text) == yaml.safe_load((ROOT / name).read_text()), f"{name} differs from the checkout's"


def test_the_pages_show_code_of_every_kind_checked_here():
    assert {language for _, _, language, _, _ in ALL} <= {"python", "yaml", "json", "toml", ""}
    assert len(ids("python")) >= 8


#: imports the block as a module and runs each extension it defines; prints what it ran
HARNESS = textwrap.dedent('''
    import importlib, inspect, os, sys
    sys.path.insert(0, sys.argv[2])
    from simpy_astra.network.backends import BACKENDS
    before = set(BACKENDS)
    name = sys.argv[1]
    module = importlib.import_module(name)
    from simpy_astra.collectives.base import CollectiveAlgorithm
    from simpy_astra.network.link import LinkElement
    from simpy_astra.network.switch import SwitchElement
    from simpy_astra.simulation import Simulation
    from simpy_astra.topologies import BasicTopology

    SYSTEM = ("{scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: 10, "
              "active-chunks-per-dimension: 1, preferred-dataset-splits: 1, all-reduce-implementation: [%s], "
              "all-gather-implementation: [ring], reduce-scatter-implementation: [ring], "
              "all-to-all-implementation: [direct]}")

    def run(tag, workload="{generate: microbench, collective: all_reduce, size: 65536, num_npus: 8}",
            network="{topology: [Ring], npus_count: [8], bandwidth: [50.0], latency: [500.0]}",
            backend="congestion_aware", algorithm="ring", extra=""):
        path = os.path.join(sys.argv[2], f"{name}_{tag}.yaml")
        with open(path, "w") as f:
            f.write(f"workload: {workload}\\nsystem: {SYSTEM % algorithm}\\nnetwork: {network}\\n"
                    f"backend: {backend}\\n{extra}")
        reports = Simulation.from_scenario(path).run()
        assert len(reports) == 8 and all(type(r.finished_ns) is int for r in reports)
        assert max(r.finished_ns for r in reports) > 0
        print("ran", tag, max(r.finished_ns for r in reports))

    for attr, obj in vars(module).items():
        if getattr(obj, "__module__", None) != name:
            continue
        spec = f"{name}:{attr}"
        if inspect.isclass(obj) and issubclass(obj, BasicTopology):
            run(attr, workload="{generate: microbench, collective: send_recv, size: 65536, num_npus: 8, src: 0, dst: 7}",
                network=f"{{topology: ['{spec}'], npus_count: [8], bandwidth: [50.0], latency: [500.0]}}")
        elif inspect.isclass(obj) and issubclass(obj, LinkElement):
            run(attr, network="{topology: [Ring], npus_count: [8], bandwidth: [50.0], latency: [500.0], "
                              f"link-model: '{spec}'}}")
        elif inspect.isclass(obj) and issubclass(obj, SwitchElement):
            run(attr, network="{topology: [Switch], npus_count: [8], bandwidth: [50.0], latency: [500.0], "
                              f"switch-model: '{spec}'}}")
        elif isinstance(obj, CollectiveAlgorithm) or (inspect.isgeneratorfunction(obj)
                                                     and list(inspect.signature(obj).parameters)[:1] == ["ctx"]):
            run(attr, algorithm=f"'{spec}'", backend="congestion_unaware")
        elif inspect.isfunction(obj) and list(inspect.signature(obj).parameters) == ["params", "prefix"]:
            continue  # a generator: its example scenario runs it (test_docs.py), with its parameters
        elif inspect.isfunction(obj) and list(inspect.signature(obj).parameters) == [
                "stage", "pp", "micro_batches", "chunks"]:  # a pipeline schedule: a pipelined job runs it
            path = os.path.join(sys.argv[2], f"{name}_{attr}.yaml")
            with open(path, "w") as f:
                f.write(f"workload: {{generate: megatron, schedule: '{spec}', args: '--num-layers 4 --hidden-size 512 "
                        f"--num-attention-heads 8 --seq-length 512 --micro-batch-size 1 --global-batch-size 8 "
                        f"--pipeline-model-parallel-size 2 --bf16'}}\\ncluster: {{preset: dgx-a100-80gb, gpus: 2}}\\n")
            reports = Simulation.from_scenario(path).run()
            assert len(reports) == 2 and max(r.finished_ns for r in reports) > 0
            print("ran", attr, max(r.finished_ns for r in reports))
    for backend in set(BACKENDS) - before:
        run(backend, backend=backend, extra=f"plugins: [{name}]\\n")
''')


@pytest.mark.parametrize("page, line, code, before", ids("python"))
def test_every_python_block_runs_and_so_does_what_it_defines(tmp_path, page, line, code, before):
    name = f"docblock_{page.stem.lower()}_{line}"
    write_recipe_files(tmp_path)  # outside the checkout, beside the files the pages show
    (tmp_path / f"{name}.py").write_text(code)
    done = subprocess.run([sys.executable, "-c", HARNESS, name, str(tmp_path)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={"SIMPY_ASTRA_CACHE": str(tmp_path / ".cache"),
                                                       "PATH": "/usr/bin:/bin", "SIMPY_ASTRA_PROGRESS": "0"})
    assert done.returncode == 0, f"{page.name}:{line}:\n{done.stdout}\n{done.stderr}"


def bare(node: ast.AST) -> str:
    """A statement without type annotations, docstrings or trailing comments (the docs may
    leave those out), as an AST dump."""
    node = copy.deepcopy(node)
    for sub in ast.walk(node):
        if isinstance(sub, ast.arg):
            sub.annotation = None
        if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
            sub.returns = None
        if isinstance(sub, ast.FunctionDef | ast.ClassDef | ast.Module) and sub.body and \
                isinstance(sub.body[0], ast.Expr) and isinstance(sub.body[0].value, ast.Constant) and \
                isinstance(sub.body[0].value.value, str) and len(sub.body) > 1:
            sub.body = sub.body[1:]
    return ast.dump(node)


@pytest.mark.parametrize("page, line, code, before", [p for p in ids("python") if NAMED_FILE.search(p.values[3])])
def test_a_block_said_to_come_from_a_file_is_in_that_file(page, line, code, before):
    """Each statement of the block (an import, a function, a class, an assignment) is one of
    the file's, but for type annotations and docstrings."""
    path = ROOT / NAMED_FILE.findall(before)[-1]
    held = {bare(statement) for statement in ast.parse(path.read_text()).body}
    for statement in ast.parse(code).body:
        assert bare(statement) in held, (f"{page.relative_to(ROOT)}:{line}: {ast.unparse(statement)[:80]!r} ... "
                                         f"differs from {path.relative_to(ROOT)}")


@pytest.mark.parametrize("page, line, code, before", ids("yaml"))
def test_every_yaml_block_parses_and_a_network_yaml_runs(tmp_path, page, line, code, before):
    doc = yaml.safe_load(code)
    assert isinstance(doc, dict)
    if {"topology", "npus_count", "bandwidth", "latency"} <= set(doc):  # a whole network YAML
        from simpy_astra.simulation import Simulation

        network = tmp_path / "net.yml"
        network.write_text(code)
        n = doc["npus_count"][0]
        scenario = tmp_path / "s.yaml"
        scenario.write_text(f"workload: {{generate: microbench, collective: all_reduce, size: 65536, num_npus: {n}}}\n"
                            "system: {scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: 10, "
                            "active-chunks-per-dimension: 1, preferred-dataset-splits: 1, all-reduce-implementation: "
                            "[ring], all-gather-implementation: [ring], reduce-scatter-implementation: [ring], "
                            f"all-to-all-implementation: [direct]}}\nnetwork: {network}\nbackend: congestion_aware\n")
        reports = Simulation.from_scenario(str(scenario)).run()
        assert len(reports) == n and all(r.finished_ns > 0 for r in reports)


#: the scenario a ``network:`` block that hands in a graph, alone, is run in
GRAPH_SCENARIO = ROOT / "scenarios" / "dragonfly_send_recv.yaml"


@pytest.mark.parametrize("page, line, code, before",
                         [p for p in ids("yaml") if "networkx:" in p.values[2] and "network:" in p.values[2]])
def test_a_graph_block_runs_with_its_optional_lines_uncommented(tmp_path, page, line, code, before):
    """The network README showed ``groups``, ``routing`` and ``routes`` beside ``topology:``;
    a reader who uncommented them got three "is not a network field and is ignored" warnings
    and a run that took none of them. Each commented key line, uncommented, must be read."""
    uncommented = re.sub(r"^(\s*)# (?=[\w.-]+:)", r"\1", code, flags=re.M)
    doc = yaml.safe_load(uncommented)
    module = doc["network"]["topology"]["networkx"].partition(":")[0]
    (tmp_path / f"{module}.py").write_text(next((ROOT / d / f"{module}.py").read_text()
                                                for d in ("examples", "scenarios") if (ROOT / d / f"{module}.py").is_file()))
    scenario = doc if "workload" in doc else {**yaml.safe_load(GRAPH_SCENARIO.read_text()), "network": doc["network"]}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(scenario))
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", "s.yaml", "--quiet"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "warning" not in done.stderr, f"{page.name}:{line}: {done.stderr}"


#: the base a sweep block without one is listed over (a Megatron scenario: such a block sweeps its flags)
SWEEP_BASE = ROOT / "scenarios" / "megatron_gpt_145b_sc21.yaml"


@pytest.mark.parametrize("page, line, code, before", [p for p in ids("yaml") if "axes:" in p.values[2]])
def test_every_sweep_block_lists_its_points(tmp_path, page, line, code, before):
    """docs/sweeps.md's Megatron block swept tensor-model-parallel-size as an axis and in a
    bundle, which ``sweep`` refuses (set by two axes) before listing a point. Each sweep block,
    beside the files the pages show (its own base, else a Megatron scenario, and a copy of a
    preset at any path it names), must list its points."""
    write_recipe_files(tmp_path)
    doc = yaml.safe_load(code)
    if "base" not in doc:
        (tmp_path / "base.yaml").write_text(SWEEP_BASE.read_text())
        doc = {"base": "base.yaml", **doc}
    for preset in doc["axes"].get("cluster.preset", []):
        if preset.endswith(".yaml"):
            (tmp_path / preset).write_text((ROOT / "simpy_astra/config/clusters/dgx-a100-80gb.yaml").read_text())
    name = Path(RECIPE_FILE.findall(before)[-1][0]) if RECIPE_FILE.findall(before) else Path("sweep.yaml")
    (tmp_path / name).write_text(yaml.safe_dump(doc, sort_keys=False))  # axes in the order written
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "sweep", str(name), "--list"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "error" not in done.stderr, f"{page.name}:{line}: {done.stderr}"


@pytest.mark.parametrize("page, line, code, before", [p for p in ids("yaml") if '..."' in p.values[2]])
def test_an_abridged_scenario_block_is_the_scenario_it_names(page, line, code, before):
    """A block whose ``args`` end in ``...`` shows a scenario of the checkout named around it
    (the README's and docs/megatron.md's SC'21 145.6B run): every field it shows is the file's,
    and the arguments it shows are how the file's begin."""
    text = " ".join(page.read_text().split())
    named = re.findall(r"scenarios/[\w-]+\.yaml", text[:text.index(" ".join(code.split()[:3]))])
    held = yaml.safe_load((ROOT / named[-1]).read_text())
    shown = yaml.safe_load(code)
    for section, fields in shown.items():
        for key, value in fields.items():
            if key == "args":
                assert " ".join(held[section][key].split()).startswith(value.removesuffix("...").strip()), named[-1]
            else:
                assert held[section][key] == value, f"{page.name}:{line}: {section}.{key} is not {named[-1]}'s"


def checkout_yaml(before: str) -> Path | None:
    """The last YAML file of the checkout the prose just before a block names, if any."""
    named = [ROOT / (a or b) for a, b in re.findall(r"`([\w./-]+\.ya?ml)`|\(([\w./-]+\.ya?ml)[,)]", before)]
    return next((path for path in reversed(named) if path.is_file()), None)


@pytest.mark.parametrize("page, line, code, before",
                         [p for p in ids("yaml") if checkout_yaml(p.values[3]) and '..."' not in p.values[2]])
def test_a_yaml_block_that_names_a_file_of_the_checkout_is_that_file(page, line, code, before):
    """docs/calibration.md shows the network YAML of tests/data/nccl/... that its quoted fit
    starts from; nothing but a reader's eye kept the two the same."""
    path = checkout_yaml(before)
    assert yaml.safe_load(code) == yaml.safe_load(path.read_text()), f"{page.name}:{line} is not {path}"


SYSTEM_JSON = {"scheduling-policy": "LIFO", "collective-optimization": "baseline", "endpoint-delay": 10,
               "active-chunks-per-dimension": 1, "preferred-dataset-splits": 1,
               "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
               "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["direct"]}


@pytest.mark.parametrize("page, line, code, before", [p for p in ids("yaml") if "jobs:" in p.values[2]])
def test_a_jobs_block_runs_with_the_files_it_names(tmp_path, page, line, code, before):
    """A ``jobs:`` block names files of the reader's (system JSONs, a trace prefix, a comm-group
    JSON); given them (an all-reduce trace of the job's ranks, a group of two), it runs as
    written, every field read."""
    doc = yaml.safe_load(code)
    for value in [doc.get("system"), *(job.get("system") for job in doc["jobs"])]:
        if isinstance(value, str):
            (tmp_path / value).write_text(json.dumps(SYSTEM_JSON))
    for job in doc["jobs"]:
        if isinstance(job["workload"], str):
            ranks = len(job.get("npus", [])) or doc["network"]["npus_count"][0] // len(doc["jobs"])
            subprocess.run([sys.executable, "-m", "simpy_astra", "generate", "microbench", "--collective",
                            "all_reduce", "--size", "1048576", "--num-npus", str(ranks), "--output",
                            job["workload"]], cwd=tmp_path, check=True, capture_output=True)
        if "comm_groups" in job:
            (tmp_path / job["comm_groups"]).write_text(json.dumps({"1": [0, 1]}))
    (tmp_path / "jobs.yaml").write_text(code)
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", "jobs.yaml", "--quiet"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "warning" not in done.stderr, f"{page.name}:{line}: {done.stderr}"


@pytest.mark.parametrize("page, line, code, before", ids("json"))
def test_every_json_block_parses(page, line, code, before):
    text = code.strip()
    json.loads(text if text.startswith("{") else "{" + text + "}")  # a fragment: an object's members


@pytest.mark.parametrize("page, line, code, before", ids("toml"))
def test_every_toml_block_parses(page, line, code, before):
    pytest.importorskip("tomllib").loads(code)  # the standard library's from Python 3.11
