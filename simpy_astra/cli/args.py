"""Command-line parsing with the one error rule: a bad flag is one ``error:`` line, exit 2.

argparse prints a usage block and then its error, and ignores nothing but accepts any unique
abbreviation (``--network`` for ``--network-backend``); both are wrong for a simulator whose
flags are copied from scripts. Here an unknown flag is an error naming the nearest real one,
and abbreviations are not accepted.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from simpy_astra.errors import InputError, bytes_fix, integer_fix
from simpy_astra.network.backends import BACKENDS, DEFAULT_BACKEND

#: a list of choices longer than this is shown as NAME in the usage, and spelled out in the help
LONGEST_CHOICES = 24

#: what a flag that takes a command's input or output is called elsewhere (the first two name
#: such a flag here too): an unknown one of these is told the command's flag that takes it,
#: whatever its name ('convert pytorch --input' was told the nearest spelling, --output, the
#: opposite of what it meant, while --host takes the input there)
ROLE_WORDS: dict[str, tuple[str, ...]] = {
    "input": ("input", "in", "inputs", "infile", "input-file", "source", "src", "from", "file", "i"),
    "output": ("output", "out", "outfile", "output-file", "output-dir", "out-dir", "outdir", "dest", "destination",
               "dst", "to", "prefix", "o"),
}


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but every error is an :class:`InputError` (``error: <prog>: <problem>``), and
    the help fits the terminal, 80 columns in a pipe (a long list of choices is named once, in the flag's help)."""

    def __init__(self, *args: Any, epilog_of: Callable[[], str] | None = None, **kwargs: Any) -> None:
        """``epilog_of``: makes the epilog when help is shown (one that reads files or imports
        modules a run does not need then costs nothing to a run, which builds the parser too)."""
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.epilog_of = epilog_of
        #: flag -> what it takes ('input', 'output'), for one whose name does not say it (--host)
        self.roles: dict[str, str] = {}
        #: flag -> the least and largest integer it takes, so that a float's fix names one it takes
        self.limits: dict[str, tuple[int, int]] = {}

    def add_argument(self, *args: Any, role: str | None = None, limits: tuple[int, int] | None = None,
                     **kwargs: Any) -> argparse.Action:
        """argparse's, and ``role``: ``input`` or ``output``, what the flag takes when its name
        does not say it (an unknown ``--input`` is told this flag); ``limits``: the least and
        largest integer a flag of integers takes."""
        if role is not None:
            assert role in ROLE_WORDS, role
            self.roles[args[0]] = role
        if limits is not None:
            self.limits[args[0]] = limits
        choices = kwargs.get("choices")
        if choices is not None and "metavar" not in kwargs \
                and len(",".join(map(str, choices))) + 2 > LONGEST_CHOICES:
            positional = bool(args) and not str(args[0]).startswith("-")
            kwargs["metavar"] = str(args[0]).upper() if positional else "NAME"
            text = kwargs.get("help")
            names = ", ".join(map(str, choices))
            if text is not argparse.SUPPRESS and not all(str(c) in (text or "") for c in choices):
                kwargs["help"] = (f"{text[:-1]}; one of {names})" if text and text.endswith(")") else
                                  f"{text} (one of {names})" if text else f"one of {names}")
        return super().add_argument(*args, **kwargs)

    def format_help(self) -> str:
        """argparse's help (as wide as the terminal; 80 columns in a pipe), with the lines it
        leaves as written (a raw epilog) fitted to that width too."""
        import shutil

        if self.epilog_of is not None:
            self.epilog, self.epilog_of = self.epilog_of(), None
        return fit_width(super().format_help(), max(shutil.get_terminal_size().columns, 40))

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{self.prog}: {self.error_for_flag(message)} (see {self.prog} --help)")

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # noqa: ANN401
        argv = list(sys.argv[1:] if args is None else args)
        known = self.known_flags()
        # a mistyped flag first: it is why a required flag looks missing
        wrong = [a for a in argv if a.startswith("-") and a not in ("-", "--") and not a[1:2].isdigit()
                 and a[1:2] != "." and a.split("=", 1)[0] not in known]
        if wrong:
            self.error(unknown_flag_problem(wrong[0], known, self.prog, self.role_flags()))
        self._refuse_repeated(argv)
        parsed, extra = self.parse_known_args(argv, namespace)
        if extra:
            self.error(unknown_flag_problem(extra[0], self.known_flags(), self.prog, self.role_flags()))
        return parsed

    def _refuse_repeated(self, argv: list[str]) -> None:
        """A flag that takes one value, given twice: argparse keeps the later and drops the
        earlier without a word (``--json-out a.json --json-out b.json`` wrote only b.json).
        Repeatable flags (``--plugin``) and switches (``--quiet`` twice is still on) pass."""
        seen: dict[str, str] = {}
        for word in argv:
            if word == "--":  # what follows is not ours (generate megatron's arguments)
                break
            action = self._option_string_actions.get(word.split("=", 1)[0]) if word.startswith("-") else None
            if action is None or action.nargs == 0 or isinstance(action, argparse._AppendAction):
                continue
            flag = word.split("=", 1)[0]
            if action.dest in seen:
                also = "" if seen[action.dest] == flag else f" (as {seen[action.dest]}, then {flag})"
                self.error(f"{flag}: given twice{also}; give it once (the later value would silently "
                           f"replace the earlier)")
            seen[action.dest] = flag

    def known_flags(self) -> list[str]:
        return [flag for action in self._actions for flag in action.option_strings]

    def role_flags(self) -> dict[str, list[str]]:
        """Role -> the flags that take it: given a role, or named for it (--input, --out); a
        positional argument given a role is named by its metavar (``SCENARIO``)."""
        found: dict[str, list[str]] = {}
        for flag in self.known_flags():
            role = self.roles.get(flag) or next((r for r, words in ROLE_WORDS.items()
                                                 if _word(flag) in words[:2]), None)
            if role is not None:
                found.setdefault(role, []).append(flag)
        for action in self._actions:
            if not action.option_strings and action.dest in self.roles:
                found.setdefault(self.roles[action.dest], []).append(action.metavar or action.dest.upper())
        return found

    def error_for_flag(self, problem: str) -> str:
        """A suggestion of an unlisted spelling (``--micro_batch``) names the listed one; a float
        given to a flag of integers (``--size 1e3``) is told the integer to write, or the flag's
        limits when it takes no integer near it."""
        found = re.search(r"(?:argument ([^:/ ]+)\S*: )?invalid int value: '([^']*)'$", problem)
        if found:
            try:
                value = float(found.group(2))
            except ValueError:  # not a number at all, or a size with its unit (1MB)
                return problem + bytes_fix(found.group(2))
            limits = self.limits.get(found.group(1) or "", ())
            fix = integer_fix(value, *limits)
            if not fix and limits and not limits[0] <= value <= limits[1]:  # no integer near it is taken
                fix = f"; it takes {limits[0]} " + (f"to {limits[1]}" if limits[1] < 2**63 - 1 else "or more")
            return problem + fix
        listed = {a.dest: a.option_strings[0] for a in self._actions
                  if a.option_strings and a.help is not argparse.SUPPRESS}
        for action in self._actions:
            for flag in action.option_strings:
                if action.help is argparse.SUPPRESS and action.dest in listed and problem.endswith(f" {flag}?"):
                    return problem[: -len(flag) - 1] + listed[action.dest] + "?"
        return problem


def _word(flag: str) -> str:
    """``--Output_File`` -> ``output-file``: a flag as ROLE_WORDS spells it."""
    return flag.lstrip("-").lower().replace("_", "-")


def _role_hint(flag: str, roles: dict[str, list[str]], prog: str) -> str:
    """``--input`` where ``--host`` takes the input -> "; did you mean --host? (it takes the
    input here)"; where a positional argument takes it (``run``'s scenario) -> "; give the
    input as the first argument: simpy-astra run SCENARIO"; nothing when the command has no
    one such flag."""
    role = next((r for r, words in ROLE_WORDS.items() if _word(flag) in words), None)
    takes = roles.get(role, []) if role else []
    if len(takes) != 1:
        return ""
    if not takes[0].startswith("-"):
        return f"; give the {role} as the first argument: {prog} {takes[0]}"
    said = "" if _word(takes[0]) in ROLE_WORDS[role] else f" (it takes the {role} here)"
    return f"; did you mean {takes[0]}?{said}"


def unknown_flag_problem(given: str, known: list[str], prog: str = "", roles: dict[str, list[str]] | None = None,
                         ) -> str:
    """``--netwrok-backend=packet`` -> "--netwrok-backend: unknown flag; did you mean
    --network-backend?" (a mistyped flag must not silently leave its default in place); a
    Megatron-LM argument given to ``prog`` itself says where such arguments go; a word for
    the input or output (``roles``: the flags that take each) names the flag that takes it."""
    flag = given.split("=", 1)[0]
    if not flag.startswith("-"):
        return f"{given!r}: unexpected argument"
    if flag == given and given in known:  # a known flag without its value
        return f"{flag}: needs a value"
    import difflib

    near = difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
    hint = megatron_hint(flag, prog) or _role_hint(flag, roles or {}, prog) or (f"; did you mean {near[0]}?" if near else "")
    return f"{flag}: unknown flag{hint}"


def is_megatron_flag(flag: str) -> bool:
    """Whether ``flag`` is a pretrain_gpt.py argument: one Megatron-LM has had (every release's
    flags, :mod:`~simpy_astra.workloads.megatron.megatron_flags`) or one the front end reads."""
    from simpy_astra.workloads.megatron import flag_kinds
    from simpy_astra.workloads.megatron.megatron_flags import ONE_VALUE, SEVERAL_VALUES, SWITCHES

    if flag in SWITCHES or flag in ONE_VALUE or flag in SEVERAL_VALUES:
        return True
    return flag_kinds.known(flag)


def megatron_hint(flag: str, prog: str) -> str:
    """Where a Megatron-LM argument goes, when one reached simpy-astra's own flags."""
    if flag in ("-h", "--help") or not is_megatron_flag(flag):
        return ""
    if prog.endswith("generate megatron"):
        return ("; it is a Megatron-LM argument: those go after -- (generate megatron --gpus N --output "
                "PREFIX -- --num-layers ...)")
    return ("; it is a Megatron-LM argument: those go in a scenario's workload: {generate: megatron, "
            "args: \"...\"} (run --help), or after -- in generate megatron")


def fit_width(text: str, width: int) -> str:
    """``text`` with every line at most ``width`` characters: a line of code with a trailing
    ``# comment`` puts the comment on lines of its own below, and a long line wraps at spaces
    with its own indentation (a comment's lines each start with ``#``; an indented line of code
    goes on four spaces further in). A word longer than the width (a path) is never cut."""
    import textwrap

    out: list[str] = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        code, sep, comment = line.partition("  # ")
        if sep and code.strip():
            out += fit_width(code.rstrip(), width).splitlines()
            hang = _room_for(indent + "    ", comment.split(), width - 2) + "# "
            out += textwrap.wrap(comment.strip(), width, initial_indent=hang, subsequent_indent=hang,
                                 break_long_words=False, break_on_hyphens=False)
            continue
        words = [piece for word in line.split() for piece in _path_pieces(word, width)]
        indent = _room_for(indent, words, width - 4)
        rest = indent + ("# " if line.lstrip().startswith("# ") else "    " if indent else "")
        out += textwrap.wrap(" ".join(words), width, initial_indent=indent, subsequent_indent=rest,
                             break_long_words=False, break_on_hyphens=False)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def _room_for(indent: str, words: list[str], width: int) -> str:
    """``indent``, or as much of it as leaves the longest of ``words`` room within ``width``:
    a comment set at column 35, a usage line under a long prog, on a 40-column terminal."""
    return indent[: max(0, width - max(map(len, words), default=0))]


def _path_pieces(word: str, width: int) -> list[str]:
    """``word``, or a path or a list of choices longer than a line broken after its slashes or
    commas into pieces that fit (``../workloads/examples/`` then ``all_reduce/...``); any other
    long word (a flag's name) whole."""
    room = width - 8  # a continuation's indentation
    mark = next((m for m in "/," if m in word), None)
    if len(word) <= room or mark is None:
        return [word]
    pieces, piece = [], ""
    for part in word.split(mark):
        if piece and len(piece) + len(part) + 1 > room:
            pieces.append(piece + mark)
            piece = part
        else:
            piece = f"{piece}{mark}{part}" if piece else part
    return [*pieces, piece]


def plain(text: str) -> str:
    """Docstring text as a terminal shows it: RST's ````literal```` marks dropped."""
    return text.replace("``", "")


def module_summary(module: str) -> str:
    """The first line of ``module``'s docstring, read without importing it (``--help`` stays
    fast and works without the module's optional dependencies); a leading
    ````simpy-astra ...````: is dropped, since the list it goes in already names the command."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec(module)
    try:
        with open(spec.origin, encoding="utf-8") as f:  # type: ignore[union-attr]
            doc = ast.get_docstring(ast.parse(f.read())) or ""
    except (AttributeError, OSError, SyntaxError, TypeError):
        return ""
    first = doc.strip().split("\n")[0]
    if first.startswith("``simpy-astra") and "``: " in first:
        first = first.split("``: ", 1)[1]
    return plain(first)


def kinds_help(command: str, noun: str, kinds: dict[str, str]) -> str:
    """``generate --help`` / ``convert --help``: each kind (name -> module) with what it does."""
    import shutil
    import textwrap

    columns = min(80, max(40, shutil.get_terminal_size().columns))  # as argparse's help: the terminal's
    width = max(map(len, kinds))
    beside = columns - width - 4 >= 24  # what a kind does beside its name, or below it on a narrow terminal
    lines = [f"usage: simpy-astra {command} {noun.upper()} [FLAGS]", "", f"{noun}s:"]
    for name, module in kinds.items():
        if beside:
            lines.append(textwrap.fill(module_summary(module), columns, initial_indent=f"  {name:<{width}}  ",
                                       subsequent_indent=" " * (width + 4), break_on_hyphens=False))
        else:
            lines += [f"  {name}", textwrap.fill(module_summary(module), columns, initial_indent="      ",
                                                 subsequent_indent="      ", break_on_hyphens=False)]
    lines += ["", f"Each {noun} has its own --help (e.g. simpy-astra {command} {next(iter(kinds))} --help)."]
    return fit_width("\n".join(lines), columns)


def log_parser(command: str, description: str, network_help: str, system_help: str, out_help: str,
               system_required: bool) -> argparse.ArgumentParser:
    """The flags ``calibrate`` and ``validate`` share: logs, network, system, out, collective."""
    p = ArgumentParser(prog=f"simpy-astra {command}", description=description)
    p.add_argument("logs", nargs="+", metavar="LOG", role="input", help="nccl-tests output (all_reduce_perf, ...)")
    p.add_argument("--network", required=True, help=network_help)
    p.add_argument("--system", required=system_required, default=None, help=system_help)
    p.add_argument("--out", required=True, help=out_help)
    p.add_argument("--collective", default=None,
                   help="the collective of every log, when the logs do not name it")
    p.add_argument("--backend", default=DEFAULT_BACKEND, metavar="NAME",
                   help=f"network backend to simulate with: {backends_help(f'default {DEFAULT_BACKEND}')}")
    add_plugin_flag(p)
    p.add_argument("--gpu-memory-bw", type=float, default=None, metavar="GBPS",
                   help="GPU memory bandwidth in GB/s (1e9 B/s) for the local copy out-of-place "
                        "all-gathers and all-to-alls make (default: the datasheet value of the "
                        "logged GPU model; none if unknown)")
    return p


def backends_help(default: str) -> str:
    """A backend flag's help: every registered backend and what it models."""
    return ("; ".join(f"{name} ({spec.help})" for name, spec in BACKENDS.items())
            + f"; or a plug-in's, by its name or as package.module:BackendSpec ({default})")


def add_plugin_flag(p: argparse.ArgumentParser) -> None:
    """``--plugin MODULE`` (repeatable), as ``run`` and ``sweep`` take it."""
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="import MODULE first: it may register collective algorithms, topologies, link "
                        "and switch models, network backends, workload generators and pipeline "
                        "schedules (repeatable; names like pkg.mod:fn in configs work without it)")
