"""The README is a short front page, and every command it and ``docs/`` show still works.

The commands run as a newcomer runs them: in a copy of the checkout (what a fresh clone holds),
after the README's own first command made its virtual environment and install there (once per
test session; the install's dependencies come from the package index or pip's cache), never
in the environment the tests run in, whose extras would hide a missing dependency.

A command shown with placeholders (``SCENARIO.yaml``, ``[--jobs N]``) or the reader's own files
is checked against its command's ``--help``: the command exists and knows every flag shown. A
concrete command runs, in a scratch folder that sees the fresh copy's files, unless it is listed
in ``LONG`` with the reason. The concrete commands, and calibrate and validate on the checkout's
own nccl-tests log, also run piped and in an 80-column pseudo-terminal, where their output must
fit and no figure may be cut (``SLOW_TOUR``'s only with SIMPY_ASTRA_SLOW=1).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest

from tests.terminal import run_in_terminal
from tests.test_docs_code import recipes, write_recipe_files

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
FRESH_MACHINE = (
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && "
    "python -m simpy_astra run scenarios/default.yaml",
    'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]" && python -m pytest -q',
)
#: commands too long for the test suite (prefix -> why); they are still checked against --help
LONG = {
    "python -m simpy_astra sweep scenarios/sweeps/lab_": "a lab sweep runs for an hour",
    "python -m simpy_astra sweep scenarios/sweeps/gemm_arrays.yaml": "needs SCALE-Sim, many points",
    "python -m simpy_astra sweep scenarios/sweeps/mesh_backends.yaml": "packet-level points",
    "python -m simpy_astra sweep scenarios/sweeps/megatron_layouts.yaml --out": "16 steps on 1,024 GPUs, minutes",
    "python -m simpy_astra generate transformer --preset llama2-70b": "thousands of trace files",
    "python -m simpy_astra generate gemm": "needs SCALE-Sim (extra .[gemm])",
    "python -m simpy_astra run scenarios/gemm": "needs SCALE-Sim (extra .[gemm])",
    "python -m simpy_astra run scenarios/transformer": "a 16-NPU transformer step",
}
#: the reader's own files, which commands name as examples (not in the checkout on purpose)
YOUR_FILES = re.compile(r"(?<!text/)Resnet50_DataParallel\.txt|et_rank0\.json|kineto_rank0\.json|traces/|kineto/|"
                        r"\.log\b|all_reduce\.log|one_node/|two_nodes/|net\.yml|sys\.json|cal/")
#: words in capitals that are values, not placeholders
VALUES = {"DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA"}


def shown_commands(path: Path) -> list[tuple[int, str]]:
    """(line, command) of every ``python -m simpy_astra`` command in a code block of ``path``:
    4-space indented blocks and fenced shell blocks, continuation lines joined, comments cut."""
    out: list[tuple[int, str]] = []
    fenced = False
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            fenced = not fenced
            i += 1
            continue
        code = line.strip() if fenced else (line[4:] if line.startswith("    ") else None)
        start = i
        if code is not None:
            while code.endswith("\\") and i + 1 < len(lines):
                i += 1
                code = code[:-1].rstrip() + " " + lines[i].strip()
            code = re.sub(r"\s+#.*$", "", code).strip()
            if "python -m simpy_astra" in code:
                out.append((start + 1, code))
        i += 1
    return out


def span_commands(path: Path) -> list[tuple[int, str]]:
    """(line, command) of every ``python -m simpy_astra`` command in a code span of the prose
    of ``path`` (a span may break across lines): `python -m simpy_astra --help`. A span naming
    the program or one command alone (`python -m simpy_astra run`) refers to it; it runs nothing."""
    lines = path.read_text().splitlines()
    prose, fenced = [], False
    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and not line.startswith("    "):
            prose.append((n, line))
    text = " ".join(line for _, line in prose)
    starts = [n for n, line in prose for _ in line.split()]  # the line of each word
    out = []
    for m in re.finditer(r"`(python -m simpy_astra(?: [^`]*)?)`", text):
        command = " ".join(m.group(1).split())
        if len(command.split()) > 3 + (command.split()[3:4] in (["run"], ["sweep"])):
            out.append((starts[len(text[:m.start()].split())], command))
    return out


def all_commands() -> list[tuple[str, int, str]]:
    return [(p.relative_to(ROOT).as_posix(), n, c) for p in (README, *DOCS)
            for n, c in sorted(shown_commands(p) + span_commands(p))]


def is_synopsis(command: str) -> bool:
    words = [w for w in re.split(r"[\s=/.,]+", command) if w]
    return bool(re.search(r"\[|\.\.\.|\*| \| |<", command)) or any(
        re.fullmatch(r"[A-Z][A-Z0-9_]*", w) and w not in VALUES for w in words)


def checkout_files() -> list[str]:
    """What a fresh clone of this checkout holds: the files git tracks and the new ones it does
    not ignore (so uncommitted work is what is tested); without git, every file outside dot
    folders, caches and results."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                cwd=ROOT, capture_output=True, check=True, timeout=60).stdout
        names = [n for n in listed.decode().split("\0") if n]
    except (OSError, subprocess.SubprocessError):
        skip = re.compile(r"(^|/)(\.[^/]*|__pycache__|[^/]*\.egg-info)(/|$)|^benchmarks/results/")
        names = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file()]
        names = [n for n in names if not skip.search(n)]
    return sorted(n for n in names if (ROOT / n).is_file())  # a tracked file deleted here is gone


def clean_env(venv: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment of a new shell: no PYTHONPATH, no virtual environment of the tests; with
    ``venv``, that environment activated (its bin first on PATH, as ``activate`` does)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    return {**env, **extra}


@pytest.fixture(scope="session")
def fresh_install(tmp_path_factory) -> Path:
    """A copy of the checkout in which the README's first command, run word for word by a shell,
    made ``.venv`` and ran the default scenario; the copy's folder."""
    clone = tmp_path_factory.mktemp("fresh-clone")
    for name in checkout_files():
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, clone / name)
    first = fresh_machine_commands()[0]
    done = subprocess.run(["bash", "-c", first], cwd=clone, env=clean_env(SIMPY_ASTRA_PROGRESS="0"),
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, f"the README's first command failed:\n{first}\n{done.stderr[-3000:]}"
    assert "sys[7] finished, 142780 cycles" in done.stdout, done.stdout[-2000:]
    return clone


def fresh_python(clone: Path) -> str:
    return str(clone / ".venv" / "bin" / "python")


def fresh_machine_commands() -> list[str]:
    """The README's first two indented code lines (a fenced block's indented lines, such as a
    table of output, are not commands)."""
    commands, fenced = [], False
    for ln in README.read_text().splitlines():
        if ln.lstrip().startswith("```"):
            fenced = not fenced
        elif ln.startswith("    ") and not fenced:
            commands.append(ln[4:])
    return commands[:2]


@cache
def _help_text(python: str, words: tuple[str, ...]) -> str:
    done = subprocess.run([python, "-m", "simpy_astra", *words, "--help"], cwd=ROOT,
                          env=clean_env(Path(python).parents[1]), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (words, done.stderr)
    return done.stdout


def help_text(words: tuple[str, ...], python: str) -> str:
    return _help_text(python, words)


def command_words(argv: list[str]) -> tuple[str, ...]:
    """The (sub)command of ``argv`` (after ``python -m simpy_astra``): ``generate microbench``."""
    if not argv or argv[0].startswith("-") or argv[0].endswith((".yaml", ".yml")):
        return ()
    if argv[0] in ("generate", "convert") and len(argv) > 1:
        return tuple(argv[:2])
    return (argv[0],)


def check_flags(command: str, python: str) -> None:
    argv = shlex.split(command.split("python -m simpy_astra", 1)[1].replace("[", " ").replace("]", " ")
                       .replace("|", " "))
    words = command_words(argv)
    text = help_text(words, python)
    for flag in {a.split("=")[0] for a in argv if a.startswith("--")}:
        assert re.search(rf"{re.escape(flag)}\b", text), f"{flag} is not a flag of '{' '.join(words)}'"


def test_readme_is_a_short_front_page_with_the_two_commands_first():
    lines = README.read_text().splitlines()
    assert len(lines) <= 300, len(lines)
    assert tuple(fresh_machine_commands()) == FRESH_MACHINE


def test_the_readme_links_every_guide_and_every_link_resolves():
    text = README.read_text()
    for page in DOCS:
        assert f"(docs/{page.name})" in text, f"the README does not link docs/{page.name}"
    for path in (README, *DOCS):
        for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", path.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            assert (path.parent / target).exists(), f"{path.name}: link {target} resolves to nothing"


def test_the_guides_the_issue_names_exist():
    names = {p.stem for p in DOCS}
    assert {"backends", "cosimulation", "collectives", "sweeps", "calibration", "generators",
            "performance"} <= names


@pytest.mark.parametrize(("doc", "line", "command"), all_commands(),
                         ids=[f"{d}:{n}" for d, n, _ in all_commands()])
def test_every_command_shown_still_runs(fresh_install, tmp_path, doc, line, command):
    """In the README's fresh install (``fresh_install``): its python, its copy's files."""
    if "pip install" in command:
        return  # the fresh-machine commands install: the first made ``fresh_install``, the second is CI
    python = fresh_python(fresh_install)
    check_flags(command, python)
    if is_synopsis(command) or YOUR_FILES.search(command):
        return
    if any(command.startswith(prefix) for prefix in LONG):
        return
    done = subprocess.run([python, *shlex.split(command)[1:]], cwd=scratch(fresh_install, tmp_path),
                          env=scratch_env(python, tmp_path), capture_output=True, text=True, timeout=600,
                          preexec_fn=cap_address_space)
    assert done.returncode == 0, f"{doc}:{line}: {command}\n{done.stderr[-2000:]}"


#: the address-space limit HPC users often run with (``ulimit -v 4194304``); every command
#: shown runs under it (issue 52: a bounded read that reserved its bound failed every run)
ADDRESS_SPACE_BYTES = 4 * 2**30


def cap_address_space() -> None:
    """In the child, before it runs: ``ulimit -v 4194304``."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))


def scratch(clone: Path, folder: Path) -> Path:
    """``folder``, seeing the fresh copy's files (links), where a command's outputs land."""
    for entry in clone.iterdir():
        if not entry.name.startswith("."):
            (folder / entry.name).symlink_to(entry)
    return folder


def scratch_env(python: str, folder: Path, **extra: str) -> dict[str, str]:
    """A new shell's environment with the fresh install active, its cache in ``folder``."""
    return clean_env(Path(python).parents[1], **{"SIMPY_ASTRA_CACHE": str(folder / ".cache"),
                                                 "SIMPY_ASTRA_PROGRESS": "0", **extra})


#: calibrate and validate on a log of the checkout (docs/calibration.md shows them on the reader's logs)
NCCL = "tests/data/nccl/dgx-a100-superbench"
CALIBRATION = (f"python -m simpy_astra calibrate {NCCL}/all_reduce.log --network {NCCL}/network.yml --out cal/",
               f"python -m simpy_astra validate {NCCL}/all_reduce.log --network cal/network.yml "
               f"--system cal/system.json --out cal/")


def tour() -> list[str]:
    """Every concrete command the README and ``docs/`` run, once each, in order; then
    calibrate and validate (which the issue names) on the checkout's own log."""
    shown = [c for _, _, c in all_commands() if "pip install" not in c and not is_synopsis(c)
             and not YOUR_FILES.search(c) and not any(c.startswith(prefix) for prefix in LONG)]
    return list(dict.fromkeys(shown)) + list(CALIBRATION)


BOX = re.compile("[\u2500-\u259f]")  # box drawing and block elements: a terminal's, not a log's
GROUPED = re.compile(r"(?<![\d,.])\d{1,3}(?:,\d{3})+(?![\d,]\d)")  # 1,234,567 (not 0,2,4)


def in_terminal(argv: list[str], cwd: Path, env: dict[str, str], columns: int = 80) -> tuple[int, list[str]]:
    """Exit status and screen lines of ``argv`` run in a pseudo-terminal ``columns`` wide (its
    stdout and stderr both), escape sequences dropped; a line redrawn in place (``\r``)
    counts as each of its drawings."""
    code, text = run_in_terminal(argv, cwd, {**env, "COLUMNS": str(columns), "LINES": "40"}, 40, columns)
    return code, re.split(r"\r\n|\r|\n", text)


def figures(lines: list[str]) -> set[str]:
    """The grouped figures (1,234,567) of ``lines``, but for progress lines, which change
    with the machine's speed."""
    return {m for ln in lines if not re.match(r"\s*(simulating|sweep\b.*\beta\b)", ln) for m in GROUPED.findall(ln)}


def words(lines: list[str]) -> str:
    """``lines`` as one line of words, wall times ('in 2.1 s') made equal across two runs."""
    return re.sub(r"\d[\d,.]* s\b", "- s", " ".join(" ".join(lines).split()))


#: tour commands whose two runs take long (command -> why); they run with SIMPY_ASTRA_SLOW=1
SLOW_TOUR = {"python -m simpy_astra run scenarios/megatron_gpt_145b_sc21.yaml": "1,536 GPUs twice: about a minute"}


def tour_params() -> list:
    return [pytest.param(c, id=re.sub(r"[^\w.]+", "-", c.split("simpy_astra ")[1])[:70],
                         marks=[pytest.mark.skipif(not os.environ.get("SIMPY_ASTRA_SLOW"),
                                                   reason=f"{SLOW_TOUR[c]}: set SIMPY_ASTRA_SLOW=1")]
                         if c in SLOW_TOUR else []) for c in tour()]


@pytest.mark.parametrize("command", tour_params())
def test_the_tours_output_fits_80_columns_and_pipes_as_plain_lines(fresh_install, tmp_path, command):
    """Issue 39: every table and progress line fits 80 columns and no number is cut; piped,
    no box drawing, and a line longer than 80 is one logical line (a note the terminal wraps),
    never a table row. Each command runs piped, then at 80 columns in a pseudo-terminal, with
    the progress lines on (the runs that take over a second show them)."""
    python = fresh_python(fresh_install)
    argv = [python, *shlex.split(command)[1:]]
    piped_dir, tty_dir = tmp_path / "piped", tmp_path / "tty"
    piped_dir.mkdir()
    tty_dir.mkdir()
    for folder in (scratch(fresh_install, piped_dir), scratch(fresh_install, tty_dir)):
        if command == CALIBRATION[1]:  # validate checks what calibrate wrote
            subprocess.run([python, *shlex.split(CALIBRATION[0])[1:]], cwd=folder, capture_output=True,
                           env=scratch_env(python, folder), timeout=600, check=True)
    done = subprocess.run(argv, cwd=piped_dir, capture_output=True, text=True,
                          env=scratch_env(python, piped_dir, SIMPY_ASTRA_PROGRESS="1"), timeout=600,
                          preexec_fn=cap_address_space)
    assert done.returncode == 0, f"{command}\n{done.stderr[-2000:]}"
    piped = (done.stdout + done.stderr).split("\n")
    code, screen = in_terminal(argv, tty_dir, scratch_env(python, tty_dir, SIMPY_ASTRA_PROGRESS="1"))
    assert code == 0, "\n".join(screen[-20:])
    assert not [ln for ln in piped if BOX.search(ln) or "\r" in ln or "\x1b" in ln], command
    assert [ln for ln in screen if len(ln) > 80] == [], command
    cut = [ln for ln in screen if re.search(r"\d…|(^|[\s│┃])[,.]\d", ln)]  # '1,362,2…', a folded ',262'
    assert cut == [], command
    assert figures(screen) <= figures(piped), f"{command}: cut on the terminal: {figures(screen) - figures(piped)}"
    on_screen = words(screen)
    rows = [ln for ln in piped if len(ln) > 80 and words([ln]) not in on_screen]
    assert rows == [], f"{command}: piped lines over 80 columns that are not one wrapped note"


def test_the_readmes_default_scenario_sentence_matches_its_trace():
    """'20 us of compute, ... a 5 us optimizer step (25,000 ns of GPU time)': the numbers are
    the durations in the default scenario's trace (issue 39: the README left out the step)."""
    from simpy_astra.workloads.chakra import read_et

    text = " ".join(README.read_text().split())
    compute = int(re.search(r"(\d+) us of compute", text).group(1))
    optimizer = int(re.search(r"(\d+) us optimizer step", text).group(1))
    gpu_ns = int(re.search(r"([\d,]+) ns of GPU time", text).group(1).replace(",", ""))
    _, nodes = read_et(str(ROOT / "scenarios" / "workloads" / "step_8npus_1MB" / "step.0.et"))
    durations = {n.name: n.duration_micros for n in nodes if n.duration_micros}
    assert durations == {"forward_backward": compute, "optimizer_step": optimizer}
    assert gpu_ns == (compute + optimizer) * 1000 == 25_000  # the run's "GPU time: 25000" (test_cli)


def test_a_pointer_to_a_section_names_the_file_that_has_it():
    """A comment '(docs/performance.md, "Scaling out")' in a scenario: that file has that heading
    (issue 39: the GPT-3 scenario sent readers to the README for a section in performance.md)."""
    pointers = []
    for path in [*(ROOT / "scenarios").rglob("*.yaml"), *(ROOT / "simpy_astra").rglob("*.py")]:
        for m in re.finditer(r'\((README|docs/[\w-]+\.md)[,:] "([^"]+)"\)', path.read_text()):
            pointers.append((path, "README.md" if m.group(1) == "README" else m.group(1), m.group(2)))
    assert pointers  # at least the GPT-3 scale scenario's
    for path, doc, section in pointers:
        text = (ROOT / doc).read_text()  # a heading, or a paragraph's bold lead ("**Error figures.**")
        headings = [ln.lstrip("#").strip() for ln in text.splitlines() if ln.startswith("#")]
        headings += re.findall(r"^\*\*([^*]+)\*\*", text, re.M)
        assert any(h.startswith(section) for h in headings), f"{path}: {doc} has no section '{section}'"


def test_the_readmes_first_command_installs_what_plots_need(fresh_install, tmp_path):
    """Issue 51: matplotlib is a core dependency, so on the README's fresh install (its first
    command, run word for word in a new venv) ``run --plots`` draws both pictures: the default
    scenario's 8 identical NPUs as one bar, 'x8'."""
    python = fresh_python(fresh_install)
    done = subprocess.run([python, "-m", "simpy_astra", "run", str(fresh_install / "scenarios" / "default.yaml"),
                           "--plots", "pl"], cwd=tmp_path, env=clean_env(Path(python).parents[1], SIMPY_ASTRA_PROGRESS="0"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for name in ("breakdown.png", "timeline.png"):
        assert (tmp_path / "pl" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    probe = subprocess.run([python, "-c", "from PIL import Image; im = Image.open('pl/breakdown.png'); "
                            "print(im.text['Description'])"], cwd=tmp_path,
                           env=clean_env(Path(python).parents[1]), capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "x: NPU (xN: N NPUs with this breakdown); y: time (us); legend: compute.other, comm.all"


#: a number word as the docs write a count
COUNTS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}


def scripts_shown(folder: str) -> list[tuple[str, str]]:
    """(doc, command) of every ``python FOLDER/NAME.py [ARGS]`` the README and docs show in
    code spans (a span may break across lines), each once."""
    found = []
    for path in (README, *DOCS):
        text = " ".join(path.read_text().split())
        for m in re.finditer(rf"`(python {folder}/[\w.]+\.py(?: [^`]*)?)`", text):
            found.append((path.name, m.group(1)))
    return list(dict.fromkeys(found))


def example_scripts() -> list[tuple[str, str]]:
    """The ``python examples/NAME.py`` commands shown (run as scripts, not through
    ``python -m simpy_astra``)."""
    return scripts_shown("examples")


def test_the_count_of_runnable_examples_is_the_number_listed():
    """docs/cosimulation.md said 'Three runnable examples come with it' above a list of five
    (``python examples/cosim_*.py`` bullets)."""
    text = (ROOT / "docs" / "cosimulation.md").read_text()
    m = re.search(r"(\w+)\s+runnable examples come with it", text)
    assert m, "the sentence that counts the co-simulation examples is gone"
    listed = re.findall(r"^- `python examples/\w+\.py`", text[m.end():], re.M)
    assert COUNTS[m.group(1).lower()] == len(listed), (m.group(1), len(listed))


@pytest.mark.parametrize(("doc", "command"), example_scripts(), ids=[c for _, c in example_scripts()])
def test_every_example_script_shown_runs(doc, command):
    """Each example script a page shows runs from the checkout with exit status 0; the one whose
    output a page quotes prints it (docs/reports.md: 6 x (trunc(500 + 2^18 / 53.69) + 10) + 10 =
    32,362 ns, bus bandwidth 2 x 3/4 x 2^20 / 32,362 = 48.60 GB/s)."""
    import sys

    done = subprocess.run([sys.executable, *shlex.split(command)[1:]], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=clean_env(SIMPY_ASTRA_PROGRESS="0"))
    assert done.returncode == 0, f"{doc}: {command}\n{done.stderr[-2000:]}"
    if command == "python examples/report_busbw.py examples/cosim_ring.yaml 1048576":
        assert done.stdout.strip() == ("4 NPUs, 1,048,576 B all-reduce in 32,362 ns: bus bandwidth 48.60 GB/s; "
                                       "busiest link 0->1 busy 91% of the time")


TWO_JOBS = "python -m simpy_astra run scenarios/two_llm_jobs_fat_tree.yaml --isolation"
MEGATRON_145B = "python -m simpy_astra run scenarios/megatron_gpt_145b_sc21.yaml"
#: (page, the command it shows, how the quoted output block after it starts): every line of the
#: block must be a line the command prints (stdout, then stderr, piped); a page may abridge
QUOTED = [
    ("README.md", TWO_JOBS, "jobs"),
    ("docs/jobs.md", TWO_JOBS, "jobs"),
    ("docs/jobs.md", TWO_JOBS, "job a finished"),
    ("docs/jobs.md", f"{TWO_JOBS} --network-backend congestion_aware", "jobs"),
    ("README.md", MEGATRON_145B, "iteration time"),
    ("docs/megatron.md", MEGATRON_145B, "iteration time"),
]


def quoted_block(doc: str, command: str, starts: str) -> list[str]:
    """The lines of the first fenced block after ``command`` in ``doc`` whose first line starts
    with ``starts``."""
    lines = (ROOT / doc).read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.strip() == command or f"`{command}`" in ln)
    for i in range(at + 1, len(lines)):
        if lines[i].strip() == "```" and lines[i + 1].startswith(starts):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            return lines[i + 1:end]
    raise AssertionError(f"{doc}: no block starting {starts!r} after {command!r}")


def printed_lines(command: str, folder: Path) -> set[str]:
    import sys

    done = subprocess.run([sys.executable, *shlex.split(command)[1:]], cwd=scratch(ROOT, folder),
                          capture_output=True, text=True, timeout=600, env=scratch_env(sys.executable, folder))
    assert done.returncode == 0, f"{command}\n{done.stderr[-2000:]}"
    return {ln.rstrip() for ln in (done.stdout + done.stderr).splitlines()}


@pytest.mark.parametrize(("doc", "command", "starts"), [
    pytest.param(*q, marks=[pytest.mark.skipif(not os.environ.get("SIMPY_ASTRA_SLOW"), reason="1,536 GPUs: a minute")]
                 if q[1] == MEGATRON_145B else []) for q in QUOTED], ids=[f"{d}:{s}" for d, _, s in QUOTED])
def test_the_output_a_page_quotes_is_what_its_command_prints(tmp_path, doc, command, starts):
    block = quoted_block(doc, command, starts)
    printed = printed_lines(command, tmp_path)
    missing = [ln for ln in block if ln.strip() and ln.rstrip() not in printed]
    assert missing == [], f"{doc}: lines quoted after '{command}' that it does not print"


def test_the_breakdown_table_of_the_reports_page_is_what_its_scenario_prints(tmp_path):
    """docs/reports.md quotes a 16-GPU Megatron step's breakdown and names its scenario in the
    paragraph below (``cluster: {...}`` and ``workload: {...}``); the table was left from an
    earlier kernel model (attention 248.0 us where the run printed 192.0)."""
    text = (ROOT / "docs" / "reports.md").read_text()
    block = quoted_block("docs/reports.md", "--json-out", "where the time went")
    paragraph = " ".join(text[text.index("(The table above:"):].split("\n\n")[0].split())
    cluster = re.search(r"`(cluster: \{[^`]+\})`", paragraph).group(1)
    workload = re.search(r"`(workload: \{[^`]+\})`", paragraph).group(1)
    (tmp_path / "step.yaml").write_text(f"{cluster}\n{workload}\n")
    printed = printed_lines(f"python -m simpy_astra run {tmp_path / 'step.yaml'}", tmp_path)
    assert [ln for ln in block if ln.rstrip() not in printed] == []


def benchmark_commands() -> list[tuple[str, str]]:
    """The ``python benchmarks/NAME.py`` commands shown."""
    return scripts_shown("benchmarks")


@pytest.mark.parametrize(("doc", "command"), benchmark_commands(), ids=[c for _, c in benchmark_commands()])
def test_every_benchmark_command_shown_names_its_script_and_flags(doc, command):
    """A benchmark a page shows exists, its ``--help`` knows every flag shown, and the tables a
    ``--tables`` picks are ones it lists (the benchmarks take minutes, so they do not run here)."""
    import sys

    argv = shlex.split(command.replace("[", " ").replace("]", " ").replace("|", " "))
    assert (ROOT / argv[1]).is_file(), f"{doc}: {command}: no {argv[1]}"
    flags = [a for a in argv[2:] if a.startswith("--")]
    if not flags:
        return
    done = subprocess.run([sys.executable, argv[1], "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=clean_env(SIMPY_ASTRA_PROGRESS="0"))
    assert done.returncode == 0, f"{doc}: {command}\n{done.stderr[-2000:]}"
    text = re.sub(r"(?<=\w-) ", "", " ".join(done.stdout.split()))  # a name argparse wrapped at its hyphen
    for flag in flags:
        assert re.search(rf"{re.escape(flag.split('=')[0])}\b", text), f"{doc}: {flag} is not a flag of {argv[1]}"
    if "--tables" in argv[:-1]:
        for table in argv[argv.index("--tables") + 1].split(","):
            assert re.search(rf"\b{re.escape(table)}\b", text), f"{doc}: {argv[1]} has no table {table!r}"


@pytest.mark.parametrize("command, quoted", recipes())
def test_every_recipe_runs_outside_the_checkout_and_prints_what_its_page_quotes(fresh_install, tmp_path, command,
                                                                               quoted):
    """In an empty folder outside the checkout holding only the files the pages show
    (``test_docs_code.recipe_files``), the command as shown in the README's fresh install,
    and the output the page quotes."""
    write_recipe_files(tmp_path)
    python = fresh_python(fresh_install)
    done = subprocess.run([python, *shlex.split(command)[1:]], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, env=scratch_env(python, tmp_path))
    assert done.returncode == 0, f"{command}\n{done.stderr[-2000:]}"
    printed = {ln.rstrip() for ln in (done.stdout + done.stderr).splitlines()}
    words = " ".join((done.stdout + done.stderr).split())
    missing = [ln for ln in quoted if ln.strip() and ln.rstrip() not in printed and " ".join(ln.split()) not in words]
    assert missing == [], f"{command}: quoted, not printed: {missing}\n{done.stdout[-1500:]}{done.stderr[-1500:]}"


def test_the_fit_docs_calibration_quotes_is_what_calibrate_prints(tmp_path):
    """docs/calibration.md shows the network YAML calibrate starts from and quotes the line
    calibrate prints on the DGX A100 log beside it."""
    import sys

    text = " ".join((ROOT / "docs" / "calibration.md").read_text().split())
    quoted = re.search(r"`calibrate` prints `([^`]+?)(?:, \.\.\.)?`", text).group(1)
    argv = ["calibrate", str(ROOT / NCCL / "all_reduce.log"), "--network", str(ROOT / NCCL / "network.yml"),
            "--out", "cal"]
    done = subprocess.run([sys.executable, "-m", "simpy_astra", *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600,
                          env=clean_env(SIMPY_ASTRA_PROGRESS="0", SIMPY_ASTRA_CACHE=str(tmp_path / ".cache")))
    assert done.returncode == 0, done.stderr[-2000:]
    assert quoted in " ".join((done.stdout + done.stderr).split()), (quoted, done.stdout[-1500:])


@pytest.mark.parametrize("script", ["megatron_sc21.py", "megatron_mcore_h100.py"])
def test_a_table_benchmark_without_its_published_table_says_where_it_comes_from(tmp_path, script):
    """docs/megatron.md shows `python benchmarks/megatron_sc21.py`; in a clone without the
    project's ../shared beside it, it ended in a FileNotFoundError traceback. Now one line of
    its own usage error naming the table, where it comes from and the flag to give it by."""
    import sys

    missing = tmp_path / "TABLE.md"
    done = subprocess.run([sys.executable, f"benchmarks/{script}", "--table", str(missing)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env=clean_env(SIMPY_ASTRA_PROGRESS="0"))
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        f"{script}: error: the published table {missing} is not there: it comes from the project's shared "
        f"folder (../shared/realtables beside the checkout); give its path with --table PATH")


def test_every_extra_a_pip_command_shown_installs_is_one_the_package_defines():
    """The pages' ``pip install -e ".[sweep]"`` commands are not run (they install minutes of
    packages; the first one is the fresh install itself): each names extras setup.cfg defines,
    so none stops on pip's 'does not provide the extra' warning with nothing installed."""
    import configparser

    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    defined = set(config["options.extras_require"])
    shown = {extra.strip() for path in (README, *DOCS)
             for group in re.findall(r"pip install -e \"?\.\[([\w,\s-]+)\]", path.read_text())
             for extra in group.split(",")}
    assert {"test", "sweep", "gemm", "pytorch"} <= shown, shown  # the pages still show them
    assert shown <= defined, f"extras shown but not defined: {sorted(shown - defined)}"


def test_a_table_benchmark_whose_table_is_in_the_script_needs_no_file(monkeypatch):
    """d08a6ec's check for a missing table refused the benchmarks whose rows are in the script
    itself (table_main(read, "", ...): nemo_a100.py, bridge_h100.py, nemo_h100_fp8.py, ...):
    'the published table . is not there'. They read no file, so none is asked for."""
    import sys

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import megatron_sc21

    scored = []
    monkeypatch.setattr(megatron_sc21, "score", lambda rows, json_path: scored.append(rows))
    monkeypatch.setattr(sys, "argv", ["nemo_a100.py"])
    assert megatron_sc21.table_main(lambda path: [{"row": path}], "", "rows in the script") == 0
    assert scored == [[{"row": ""}]]
