"""A Megatron-LM command line read word by word as Megatron's argparse reads it.

A launch script pasted into YAML brings its ``\\`` line continuations and, from web pages,
non-breaking spaces and typographic dashes; they are normalised or named here. Every word
is then a flag or a value of the flag before it: a flag that takes no value followed by a bare
word is an error (argparse's "unrecognized arguments"), never a value silently swallowed, so
``–tensor-model-parallel-size 4`` (an en dash) cannot leave tp at its default. Flags this
simulator does not model are told apart: paths and logging are accepted, a Megatron-LM flag
that changes a step's time is refused by name, and a word that is no Megatron-LM flag at all
gets the nearest known flag as ``did you mean``.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from simpy_astra.config.field_values import show_value
from simpy_astra.errors import InputError, InvalidConfigurationError, non_ascii, with_article
from simpy_astra.workloads.megatron import shell_words
from simpy_astra.workloads.megatron.launcher import is_launcher, launcher_of
from simpy_astra.workloads.megatron.megatron_flags import ONE_VALUE, SEVERAL_VALUES, SWITCHES

#: spaces a web page or word processor puts where a shell has a plain space
_ODD_SPACES = re.compile(r"[\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
#: marks of no width a web page puts inside words (where a long flag may break, or a byte-order
#: mark): removed, since as spaces they split '--tensor-model-\u200bparallel-size' in two
_NO_WIDTH = re.compile(r"[\u00ad\u200b-\u200d\u2060\ufeff]")
#: a shell line continuation (backslash at a line's end), or one left alone between words
_CONTINUATION = re.compile(r"\\[ \t]*(\r?\n|$)|(?<=\s)\\(?=\s)")
#: dashes that look like ``-`` and are not
_DASHES = {"\u2010": "hyphen", "\u2011": "non-breaking hyphen", "\u2012": "figure dash",
           "\u2013": "en dash", "\u2014": "em dash", "\u2015": "horizontal bar", "\u2212": "minus sign",
           "\ufe63": "small hyphen-minus", "\uff0d": "full-width hyphen-minus"}
_NUMBER = re.compile(r"^-\d+(\.\d*)?([eE][-+]?\d+)?$|^-\.\d+")
#: what a shell would have expanded: $NAME, ${NAME}, $(command), $((arithmetic)), a script's
#: own arguments ($1, "$@", $*) and the special parameters, and `command`
_SHELL_EXPANSION = re.compile(r"\$(?:[A-Za-z_0-9@*#?!$]|\{|\()|`")


#: a shell's own syntax in a launch script's line, read here as a word: (pattern, what it is, fix)
_SHELL_SYNTAX = (
    (re.compile(r"^#"), "starts a shell comment", "remove it to the line's end"),
    (re.compile(r"^(\d*[<>]|&>|\||&&|;|&$)"), "is a shell redirection, pipe or separator",
     "remove it and what follows"),
    (re.compile(r"^[A-Za-z_]\w*="), "is a shell assignment", "give the arguments it holds alone"),
)
#: what a modelled value may not be: a comment, or a shell operator alone (a pipeline layout's
#: stages are split by |, so '|Ett|ttL', quoted in the script, is one value)
_NOT_A_VALUE = (_SHELL_SYNTAX[0], (re.compile(r"^(\d*[<>]+&?\d*|&>|\|\|?|&&|;|&)$"), *_SHELL_SYNTAX[1][1:]))


def shell_syntax(word: str, where: str, patterns: tuple = _SHELL_SYNTAX) -> None:
    """Refuse a word that is a shell's syntax in a pasted launch script (``# comment``,
    ``2>&1 | tee log``, ``GPT_ARGS="..."``): it was told only that it follows a flag that
    takes one value, as if it were a value given twice; after a flag of paths it was taken as
    a path, and a flag in the comment read as given."""
    for pattern, what, fix in patterns:
        if pattern.match(word):
            raise InputError(f"{where}: {_shown(word)} {what}, which nothing reads here; {fix}")


def unexpanded(word: str, what: str | None, where: str) -> None:
    """Refuse ``word`` holding a shell's ``$VAR`` left from a launch script (``what``: the flag
    and value it was given as, None for a word in place of arguments): it was told only
    'invalid int value', or 'follows --vocab-size, which takes one value'."""
    if _SHELL_EXPANSION.search(word):
        head, fix = (f"{what}: ", "value") if what else ("", "arguments")
        raise InputError(f"{where}: {head}{word!r} is left for a shell to expand, and nothing expands "
                         f"it here; write the {fix} it stands for")


@dataclass
class Reading:
    """The words of a command line sorted: those argparse reads (the modelled flags and their
    values), and every other flag with its values (accepted as without effect on time)."""

    modelled: list[str] = field(default_factory=list)
    others: dict[str, list[str]] = field(default_factory=dict)
    #: a warning for each of ``others`` given again with other values (:func:`twice`)
    others_twice: list[str] = field(default_factory=list)


#: the most words and characters a command line may have: Megatron-LM's own launch scripts
#: pass a few hundred words, and argparse's time grows with the square of the count (4,000
#: words take 0.5 s to read, so a line of 10^5 pasted in a loop would take about 5 minutes)
MAX_WORDS = 4096
MAX_CHARACTERS = 1 << 20


def words(args: object, where: str) -> list[str]:
    """``args`` (one string as in a launch script, or a list of words) as words, at most
    :data:`MAX_WORDS` of them, a pasted launcher's words before ``pretrain_gpt.py`` dropped
    (unread: :func:`launch_line` gives them; a script of another model is refused here too)."""
    return launch_line(args, where)[1]


#: Megatron-LM's training scripts (of its history and branches) of other models than
#: pretrain_gpt.py's GPT: their arguments read alike, and the step simulated would be a GPT's
_OTHER_MODELS = {
    **dict.fromkeys(("pretrain_bert.py", "pretrain_albert.py"), "BERT, an encoder with a masked-LM head"),
    **dict.fromkeys(("pretrain_ict.py", "pretrain_bert_ict.py", "pretrain_realm.py"),
                    "a BERT retriever (two encoders)"),
    **dict.fromkeys(("pretrain_t5.py", "pretrain_t5_core.py", "pretrain_ul2.py"), "T5, an encoder-decoder"),
    **dict.fromkeys(("pretrain_mamba.py", "pretrain_hybrid.py", "pretrain_mamba_tt_diffusion.py"),
                    "Mamba, or a hybrid of Mamba and attention layers"),
    **dict.fromkeys(("pretrain_retro.py", "pretrain_retro_core.py"), "RETRO, a GPT with a retrieval encoder"),
    **dict.fromkeys(("pretrain_vlm.py", "pretrain_qwenvl.py"), "a vision-language model"),
    **dict.fromkeys(("pretrain_vit.py", "pretrain_vision_classify.py", "pretrain_vision_dino.py",
                     "pretrain_vision_inpaint.py"), "a vision transformer"),
}


def launch_line(args: object, where: str) -> tuple[list[str], list[str]]:
    """``args`` split once: (a pasted launcher's words, up to ``pretrain_gpt.py``; Megatron-LM's
    words after it). :mod:`~simpy_astra.workloads.megatron.launcher` reads the first. A pasted
    script of Megatron-LM's that trains another model than GPT is refused."""
    tokens = _split(args, where)
    megatron = _launcher_dropped(tokens)
    launcher = tokens[:len(tokens) - len(megatron)]
    script = _script_name(launcher)
    if script in _OTHER_MODELS:
        raise InputError(f"{where}: {script} trains {_OTHER_MODELS[script]}; this simulates pretrain_gpt.py's GPT "
                         f"model only; give its arguments to pretrain_gpt.py")
    return launcher, megatron


def _split(args: object, where: str) -> list[str]:
    """``args`` as words, a launcher's too."""
    if isinstance(args, list) and args and all(isinstance(a, str | int | float) and not isinstance(a, bool)
                                               for a in args):  # YAML reads `- 4` as a number
        words = [w for w in (_plain(str(a)).strip() for a in _bounded(args, where)) if w]
        try:
            return _bounded(_shell_command_read(words), where)
        except ValueError as exc:
            raise InputError(f"{where}: cannot be split into arguments ({exc}); check its quotes") from None
    if isinstance(args, list) and args:  # named by its item: the whole list, pasted, ran to hundreds of words
        i, bad = next((i, a) for i, a in enumerate(args) if isinstance(a, bool) or not isinstance(a, str | int | float))
        raise InputError(f"{where}: [{i}] is {show_value(bad)}: a list of arguments holds words (text or numbers), one per "
                         f"flag or value; write it as the word Megatron-LM reads, or give one string")
    if not isinstance(args, str) or not args.strip():
        raise InputError(f"{where}: must be the pretrain_gpt.py arguments as one string (got {args!r})")
    if len(args) > MAX_CHARACTERS:
        raise InputError(f"{where}: {len(args):,} characters, more than a launch script's arguments hold "
                         f"(at most {MAX_CHARACTERS:,} are read); give pretrain_gpt.py's arguments only")
    text = _CONTINUATION.sub(" ", _plain(args))
    try:
        return _bounded(_shell_command_read(shell_words.split(text)), where)
    except ValueError as exc:
        raise InputError(f"{where}: cannot be split into arguments ({exc}); check its quotes") from None


#: a shell that runs its ``-c`` word as a command line (``bash -c``, ``sh -lc``, ``/bin/zsh -xc``)
_SHELL = re.compile(r"^(?:ba|z|k|da)?sh$")
_RUNS_ITS_WORD = re.compile(r"^-[a-z]*c[a-z]*$")


def _shell_command_read(tokens: list[str]) -> list[str]:
    """``tokens`` with a shell's ``-c 'COMMAND'`` (``srun -N 2 bash -c 'torchrun ...
    pretrain_gpt.py ...'``, one quoted word) replaced by COMMAND's words, split as that shell
    splits them: the launcher and the arguments are inside it, and the line read as its first
    word only ('srun' comes before any flag)."""
    for i, word in enumerate(tokens[:-2]):
        if _SHELL.match(word.rpartition("/")[2]) and _RUNS_ITS_WORD.match(tokens[i + 1]):
            return [*tokens[:i], *_shell_command_read(shell_words.split(tokens[i + 2])), *tokens[i + 3:]]
    return tokens


def _plain(text: str) -> str:
    """``text`` with the spaces of web pages as plain spaces and their marks of no width gone."""
    return _NO_WIDTH.sub("", _ODD_SPACES.sub(" ", text))


def _bounded(found: list, where: str) -> list:
    """``found``, unless it holds more than :data:`MAX_WORDS` words."""
    if len(found) > MAX_WORDS:
        raise InputError(f"{where}: more than {MAX_WORDS:,} words, more than a launch script's arguments "
                         f"hold; give pretrain_gpt.py's arguments only, each flag once")
    return found


def _looks_like_flag(word: str) -> bool:
    return word.startswith("-") and len(word) > 1 and not _NUMBER.match(word)


def _misdashed(word: str) -> str | None:
    """What is wrong with a word meant as a flag, or None."""
    lead = word.lstrip("".join(_DASHES) + "-")
    if word[:1] in _DASHES or word[1:2] in _DASHES:
        dash = _DASHES.get(word[0]) or _DASHES[word[1]]
        return f"{word!r} starts with {with_article(dash)}, not two ASCII hyphens; type --{lead}"
    if word.startswith("-") and not word.startswith("--") and lead[:1].isalpha() and len(lead) > 1:
        return f"{word!r} has one dash; Megatron-LM's flags take two: --{lead}"
    return None


def _stray(tokens: list[str], i: int, arity: dict[str, int | str]) -> str:
    """Why ``tokens[i]``, a bare word, is neither a flag nor a value."""
    word = tokens[i]
    if i == 0:
        return f"{word!r} comes before any flag"
    before = tokens[i - 1]
    flag = before.partition("=")[0]
    if before.startswith("--") and "=" not in before:
        return f"{word!r} follows {flag}, which takes no value"
    if before.startswith("--") and before.endswith("="):  # '--tp= 2': a space after the '='
        return f"{word!r} follows {before!r}, whose value after the '=' is empty; write {flag}={word} or {flag} {word}"
    owner = next((t for t in reversed(tokens[:i]) if t.startswith("--")), "")
    return f"{word!r} follows {owner.partition('=')[0]} {before!r}, which takes one value" if owner else \
        f"{word!r} follows {before!r}, which is no flag"


def _launcher_dropped(tokens: list[str]) -> list[str]:
    """The arguments of a pasted command line (``torchrun ... pretrain_gpt.py ARGS``): a launch
    line starts with a program, never a flag, and its script comes before any of Megatron-LM's
    flags; a ``.py`` word after one is a value (``--tokenizer-model tok.py``), whose flags
    before it were dropped as a launcher's, in silence. A script run as a module (``python -m
    pretrain_gpt``, ``torchrun ... -m pretrain_gpt``) ends the launcher's words too; a
    launcher's module (``python -m torch.distributed.run``) and another program's ``-m``
    (``srun -m block``) do not."""
    if not tokens or tokens[0].startswith("-"):
        return tokens
    runs_modules = False  # a Python interpreter or torchrun came: its -m names the script
    for i, word in enumerate(tokens):
        if word.endswith(".py"):
            return tokens[i + 1:]
        if runs_modules and word in _MODULE_FLAGS and i + 1 < len(tokens) and not is_launcher(tokens[i + 1]) \
                and not tokens[i + 1].startswith("-"):
            return tokens[i + 2:]
        if word.partition("=")[0] in _MEGATRON_FLAGS:
            break
        runs_modules = runs_modules or bool(_PYTHON.match(word.rpartition("/")[2])) or launcher_of(word) == "torchrun"
    return tokens


#: a Python interpreter (python, python3.10), whose ``-m`` / ``--module`` runs the script as a
#: module, as torchrun's does (``python -m torch.distributed.run`` is one: launcher.launcher_of)
_PYTHON = re.compile(r"^python[\d.]*$")
_MODULE_FLAGS = ("-m", "--module")


def _script_name(launcher: list[str]) -> str:
    """The file name of the script a launcher's words end with (``pretrain_bert.py`` of
    ``/opt/Megatron-LM/pretrain_bert.py``, of a module ``megatron_lm.pretrain_bert`` too)."""
    if not launcher:
        return ""
    if len(launcher) > 1 and launcher[-2] in _MODULE_FLAGS and not launcher[-1].endswith(".py"):
        return launcher[-1].rpartition(".")[2] + ".py"
    return launcher[-1].rpartition("/")[2]


#: every flag Megatron-LM's pretrain_gpt.py has had: none starts a launcher's words
_MEGATRON_FLAGS = frozenset((*SWITCHES, *ONE_VALUE, *SEVERAL_VALUES))


def _shown(word: str) -> str:
    """``word`` quoted, its middle elided past 60 characters."""
    return repr(word) if len(word) <= 60 else repr(f"{word[:40]} ... {word[-15:]}")


def known_flags(modelled: Iterable[str], accepted: Iterable[str]) -> list[str]:
    return sorted({*modelled, *accepted, *SWITCHES, *ONE_VALUE, *SEVERAL_VALUES})


#: the short names Megatron users write for its flags (a sweep's expressions name them so too)
SHORT_NAMES = {"tensor-model-parallel-size": "tp", "pipeline-model-parallel-size": "pp",
               "virtual-pipeline-model-parallel-size": "vp", "context-parallel-size": "cp",
               "expert-model-parallel-size": "ep", "expert-tensor-parallel-size": "etp",
               "micro-batch-size": "mb", "global-batch-size": "gb", "sequence-parallel": "sp",
               "recompute-granularity": "recompute", "use-distributed-optimizer": "dist_opt"}


#: what a job's launcher or cluster gives, written among Megatron's flags: none is an argument of
#: pretrain_gpt.py, and the closest spelling pointed elsewhere (--data-parallel-size: "did you
#: mean --model-parallel-size?"); each -> what it is and where it goes
_GIVEN_ELSEWHERE = {
    **dict.fromkeys(("--gpus", "--num-gpus", "--world-size", "--nnodes", "--num-nodes", "--nproc-per-node",
                     "--nproc_per_node", "--gpus-per-node"),
                    "the job's GPUs are not an argument of pretrain_gpt.py (torchrun's --nnodes x --nproc-per-node "
                    "give them): give the GPU count as cluster.gpus in a scenario (generate megatron: --gpus "
                    "before --)"),
    **dict.fromkeys(("--data-parallel-size", "--dp", "--data-parallel"),
                    "the data-parallel size is not an argument of Megatron-LM: it follows from the GPU count, gpus / "
                    "(tp x pp x cp); set the GPUs (cluster.gpus in a scenario, generate megatron's --gpus)"),
    "--preset": "the machine is not an argument of Megatron-LM: name it as cluster.preset in a scenario (generate "
                "megatron: --preset before --)",
}


#: a default no Megatron-LM names, by the one flag that turns it off
_OPPOSITES = {"--add-bias-linear": "--disable-bias-linear"}


def suggestion(flag: str, known: list[str]) -> str:
    """'; did you mean --FLAG?' for a misspelt flag: its spelling in lower case with - for _
    (``--TENSOR_MODEL_PARALLEL_SIZE``), a short name (``--tp``: no flag, in any release), else
    the closest spelling."""
    folded = "--" + flag.lstrip("-").lower().replace("_", "-")
    negated = _OPPOSITES.get(folded, "--no-" + folded[2:])
    if folded != negated and negated in known:  # --gradient-accumulation-fusion: only its opposite exists
        return (f"; Megatron-LM has only its opposite, {negated}: what that turns off is on by default, so leave "
                f"{flag} out")
    by_short = {short.replace("_", "-"): f"--{name}" for name, short in SHORT_NAMES.items()}
    near = ([folded] if folded in known else [by_short[folded[2:]]] if folded[2:] in by_short else
            difflib.get_close_matches(flag, known, n=1, cutoff=0.75))
    return non_ascii(flag) + (f"; did you mean {near[0]}?" if near else "")


def read(tokens: list[str], modelled: Iterable[argparse.Action], accepted: Callable[[str], bool],
         refused: dict[str, str], where: str, also_known: Iterable[str] = ()) -> Reading:
    """Sort ``tokens`` into the modelled flags (``modelled``: their argparse actions) and the
    other flags.

    ``accepted(flag)`` says whether an unmodelled flag is accepted (no effect on time);
    ``refused`` maps flags known not to be modelled to what they are."""
    arity = {f: (0 if a.nargs == 0 else "*" if a.nargs in ("*", "+") else 1)
             for a in modelled for f in a.option_strings}
    known = known_flags(arity, also_known)
    out = Reading()
    i = 0
    while i < len(tokens):
        word = tokens[i]
        bad = _misdashed(word)
        if bad:
            raise InputError(f"{where}: {bad}")
        if not word.startswith("--"):
            unexpanded(word, None, where)
            shell_syntax(word, where)
            raise InputError(f"{where}: {_stray(tokens, i, arity)} (Megatron's argparse: unrecognized "
                             f"arguments: {word})")
        flag, eq, value = word.partition("=")
        if len(flag.split()) > 1:  # a quoted command line, or a YAML list item '--num-layers 2'
            raise InputError(f"{where}: {_shown(word)} is one word with spaces in it; give each flag and each "
                             f"value as a word of its own (unquoted after --, or one list item each in YAML: "
                             f"[{', '.join(flag.split()[:2])}])")
        if flag in refused:
            raise InputError(f"{where}: {flag} is not modelled ({refused[flag]}); remove it "
                             f"(see simpy-astra generate megatron --help)")
        takes = arity.get(flag)
        if takes is None:
            takes = 0 if flag in SWITCHES else 1 if flag in ONE_VALUE else "*" if flag in SEVERAL_VALUES else None
            if not accepted(flag):
                if flag in _GIVEN_ELSEWHERE:
                    raise InputError(f"{where}: {flag}: {_GIVEN_ELSEWHERE[flag]}, and remove it here")
                if takes is None:
                    raise InputError(f"{where}: {flag} is not an argument of Megatron-LM's pretrain_gpt.py "
                                     f"that this simulator knows{suggestion(flag, known)}")
                raise InputError(f"{where}: {flag} is a Megatron-LM argument that may change a step's time "
                                 f"and is not modelled; remove it (see simpy-astra generate megatron --help)")
        values = [value] if eq else []
        i += 1
        if takes == 0 and eq:
            raise InputError(f"{where}: {flag} takes no value (got {word!r})")
        if not eq and takes == 1:
            if i >= len(tokens) or (flag not in arity and _looks_like_flag(tokens[i])):
                raise InputError(f"{where}: argument {flag}: expected one value")
            values, i = [tokens[i]], i + 1
        elif not eq and takes in ("*", None):
            while i < len(tokens) and not _looks_like_flag(tokens[i]):
                values.append(tokens[i])
                i += 1
            if takes is None and values:
                raise InputError(f"{where}: {flag} is accepted as having no effect on a step's time, but this "
                                 f"simulator does not know whether it takes values, and {values[0]!r} follows it; "
                                 f"write {flag}={values[0]} if it is its value")
        for value in values:  # a shell's word taken as a value; a modelled value is judged by its flag
            if flag in arity:  # (a pipeline layout's stages are split by |: '|Ett|ttL' quoted is one)
                unexpanded(value, f"{flag} {value}", where)
            shell_syntax(value, where, _NOT_A_VALUE if flag in arity else _SHELL_SYNTAX[:2])
        if flag in arity:
            out.modelled += [flag, *values] if not eq else [word]
        else:
            if out.others.get(flag, values) != values:  # argparse keeps the later, timing or not
                out.others_twice.append(twice(where, flag, out.others[flag], values, "which changes no step's time"))
            out.others[flag] = values
    return out


#: one argument's two names that no Megatron-LM takes together (argparse reads them into one
#: value here, so the later would silently win): (older name, newer, rule, Megatron's words)
_ONE_NAME = (
    ("--batch-size", "--micro-batch-size", "one micro-batch name",
     # the micro-batch of the Megatron-LM before micro-batches (to 2020-12), which had no
     # --micro-batch-size; every later one stops on it
     "no Megatron-LM takes both (Megatron, since 2020-12: --batch-size argument is no longer valid, use "
     "--micro-batch-size instead)"),
    ("--model-parallel-size", "--tensor-model-parallel-size", "one tensor-parallel name",
     # the tensor-parallel size of the Megatron-LM before pipelines (to 2020-12); every later one
     # stops on it
     "no Megatron-LM takes both (Megatron, since 2020-12: --model-parallel-size is no longer valid, use "
     "--tensor-model-parallel-size instead)"),
    ("--encoder-seq-length", "--seq-length", "one sequence-length name",
     "Megatron takes one of them (validate_args: if args.seq_length is not None: assert "
     "args.encoder_seq_length is None)"),
    ("--overlap-p2p-communication", "--no-overlap-p2p-communication", "one p2p-overlap name",
     # the opt-in switch became the default in 2023-10 (4eeff55d1f), and its opposite the flag
     "no Megatron-LM takes both, and they say opposite things (the overlap is the default since 2023-10: "
     "leave both out to overlap)"),
)


def given_twice(tokens: list[str], options: Iterable[argparse.Action], where: str) -> list[str]:
    """A warning for each flag that takes values given again with other values: argparse, as
    Megatron-LM's, keeps the later without a word (``--tensor-model-parallel-size 2 ...
    --tensor-model-parallel-size 4`` ran at tp 4); launch scripts append overrides so, hence a
    warning. ``tokens``: the modelled flags' words (:attr:`Reading.modelled`)."""
    by_name = {name: action for action in options for name in action.option_strings}
    seen: dict[str, list[str]] = {}  # dest -> its values
    out = []
    i = 0
    while i < len(tokens):
        name, eq, value = tokens[i].partition("=")
        i += 1
        action = by_name.get(name)
        if action is None or action.nargs == 0 or isinstance(action, argparse._AppendAction):
            continue
        values = [value] if eq else []
        while not eq and i < len(tokens) and (not tokens[i].startswith("-") or _NUMBER.match(tokens[i])):
            values.append(tokens[i])
            i += 1
        earlier = seen.get(action.dest)
        if earlier is not None and earlier != values:
            out.append(twice(where, name, earlier, values, "as this step does"))
        seen[action.dest] = values
    return out


def twice(where: str, flag: str, earlier: list[str], later: list[str], effect: str) -> str:
    """The warning for ``flag`` given twice with other values: which one Megatron-LM keeps."""
    first, then = " ".join(earlier) or "no value", " ".join(later) or "no value"
    return (f"{where}: {flag} is given twice, {first} then {then}: Megatron-LM's argparse keeps the later "
            f"({then}), {effect}; remove the one you do not mean")


def one_name_each(tokens: list[str], where: str) -> None:
    """Refuse an argument given under both of its names (:data:`_ONE_NAME`)."""
    given = {token.split("=", 1)[0] for token in tokens}
    for old, new, rule, why in _ONE_NAME:
        if {old, new} <= given:
            raise InvalidConfigurationError(f"{where}: {old} with {new}: {why}; give {new} alone", rule)
