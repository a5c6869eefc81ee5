"""Every file of ours the docs and docstrings name exists, and every name they place in one is there.

Modules were split (config/scenario.py into scenario_*.py, report/console.py into output.py,
widths.py, ..., sweep/store.py into result_row.py, ...): prose that named the old home kept
reading as true. Docstrings had named ``simpy_astra/calibrate_cli.py`` (the command is
``simpy_astra/cli/calibrate.py``), ``workloads/transformer_graph.py: KIND_PREFIX`` (it is in
``workloads/transformer/graph.py``) and ``config/scenario.py: _written_groups`` (now
``scenario_workload.py: written_groups``). The checks read only what is ours: a path whose first
folder is one of the project's, a bare file name unless it is Megatron-LM's or a user's file the
docs show, and a name given as ``file.py: name``, ``file.py``'s ``name`` or ``file.py`` (``name``, ...).
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "simpy_astra"
#: the project's top folders, and the simpy_astra packages setup.cfg maps onto some of them
TOP = {"simpy_astra", "workloads", "collectives", "topologies", "benchmarks", "examples", "tests",
       "scenarios", *(p.name for p in PACKAGE.iterdir() if p.is_dir())}
#: file names the docs give that are not ours: Megatron-LM's and NeMo's sources, and files a
#: user writes in the docs' examples
NOT_OURS = {"pretrain_gpt.py", "pretrain_bert.py", "p2p_communication.py", "transformer.py", "monitor.py", "my_algo.py",
            "arguments.py"}
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("*/README.md")),
         *sorted(PACKAGE.glob("*/README.md"))]
CODE_FOLDERS = ("simpy_astra", "workloads", "collectives", "topologies", "benchmarks", "examples", "tests")
SOURCES = sorted(p for folder in CODE_FOLDERS for p in (ROOT / folder).rglob("*.py"))
#: texts that name files on purpose that are not there: this one's stale examples, a fake package
UNREAD = {ROOT / "tests" / "test_docs_names.py", ROOT / "tests" / "test_sweep_simulator.py"}

PATH = re.compile(r"(?<![\w/.-])([A-Za-z_][\w/-]*\.py)\b")
NAMED = re.compile(r"([A-Za-z_][\w/-]*\.py)(?:`?: (`?)|`'s (`)|`? \((`))([A-Za-z_]\w*)(?![\w.])")
LISTED = re.compile(r"([A-Za-z_][\w/-]*\.py)`? \(((?:`[A-Za-z_]\w*(?:\(\))?`(?:, |/| and )?)+)\)")


def homes(path: str) -> list[Path]:
    """The files of ours a mention stands for: by its path from the top (``simpy_astra/collectives/``
    is ``collectives/``), or, for a bare name, any file so named."""
    if "/" in path:
        parts = path.split("/")
        if parts[0] not in TOP:
            return []
        tails = [path] + ([path.split("/", 1)[1]] if parts[0] == "simpy_astra" else [])
        return [p for p in SOURCES if any(p.as_posix().endswith("/" + t) for t in tails)]
    return [p for p in SOURCES if p.name == path]


@cache
def defined(path: Path) -> frozenset[str]:
    """Names a module defines (functions, classes, methods, assignments, attributes set)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return frozenset(names)


def texts() -> list[tuple[Path, str]]:
    return [(p, p.read_text()) for p in (*PAGES, *SOURCES) if p not in UNREAD]


def test_every_file_of_ours_the_docs_and_docstrings_name_exists():
    missing = []
    for where, text in texts():
        for m in PATH.finditer(text):
            path = m.group(1)
            if path.rsplit("/", 1)[-1] in NOT_OURS or "NAME" in path:  # a user's file, a placeholder
                continue
            ours = path.split("/")[0] in TOP if "/" in path else where in PAGES
            if ours and not homes(path):
                missing.append(f"{where.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {path}")
    assert not missing, "named but not there:\n" + "\n".join(missing)


def test_every_name_placed_in_a_file_of_ours_is_defined_there():
    wrong = []
    for where, text in texts():
        mentions = [(m, m.group(1), [m.group(5)], any(m.group(2, 3, 4))) for m in NAMED.finditer(text)]
        mentions += [(m, m.group(1), re.findall(r"`(\w+)", m.group(2)), True) for m in LISTED.finditer(text)]
        for m, path, names, quoted in mentions:
            files = homes(path)
            for name in names:
                # a bare word after "file.py:" is prose unless it reads as code (snake_case, CamelCase)
                code_like = quoted or "_" in name or (name != name.lower() and name != name.upper())
                if files and code_like and not any(name in defined(f) or f"'{name}'" in f.read_text()
                                                   or f'"{name}"' in f.read_text() for f in files):
                    line = text.count("\n", 0, m.start()) + 1
                    wrong.append(f"{where.relative_to(ROOT)}:{line}: {path}: {name}")
    assert not wrong, "not defined where named:\n" + "\n".join(wrong)


DOTTED = re.compile(r"`~?simpy_astra((?:\.\w+)+)`")


def module_file(parts: list[str]) -> Path | None:
    """The file of ``simpy_astra.<parts>`` (collectives, topologies and workloads sit at the top)."""
    for base in (PACKAGE, ROOT):
        folder = base.joinpath(*parts)
        for path in (folder.with_suffix(".py"), folder / "__init__.py"):
            if path.is_file() and (base == PACKAGE or parts[0] in TOP):
                return path
    return None


def test_every_dotted_name_of_ours_is_defined_in_the_module_it_names():
    """``simpy_astra.workloads.generated.LazyTraces`` kept pointing at the module that hands the
    name on after the split; the name is defined in ``rank_summary``."""
    wrong = []
    for where, text in texts():
        for m in DOTTED.finditer(text):
            parts = m.group(1).strip(".").split(".")
            for cut in range(len(parts) - 1, 0, -1):
                home = module_file(parts[:cut])
                if home is not None:
                    name = parts[cut]
                    # a package's __init__ is its face: the names it imports are its own
                    face = home.name == "__init__.py" and re.search(rf"\b{name}\b", home.read_text())
                    if module_file(parts[:cut + 1]) is None and name not in defined(home) and not face:
                        wrong.append(f"{where.relative_to(ROOT)}: simpy_astra{m.group(1)}")
                    break
    assert not wrong, "not defined in the module named:\n" + "\n".join(wrong)
