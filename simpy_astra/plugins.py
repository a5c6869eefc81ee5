"""Collective algorithms and topologies from the user's own modules, without editing ours.

Three ways in, all resolved before time starts:

* a name ``package.module:attribute`` wherever a config names an algorithm or topology
  (``"all-reduce-implementation": ["my_pkg.algos:my_ring"]``, ``topology: [my_pkg.topo:Torus]``);
* a module imported with ``--plugin MODULE`` or a scenario's ``plugins: [MODULE, ...]``,
  which registers names with :func:`collectives.register` / :func:`topologies.register`;
* packaging entry points in the groups ``simpy_astra.collectives`` and
  ``simpy_astra.topologies`` (the entry point's name is the name configs use).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import operator
import os
import re
import sys
from collections.abc import Callable
from functools import cache
from importlib.machinery import PathFinder
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from simpy.events import Timeout

from simpy_astra.infra import files
from simpy_astra.infra.registry_names import origin
from simpy_astra.infra.zero_time import ZERO_TIME_RESUMES, ZeroTimeGuard  # noqa: F401 - the limit, still importable here

COLLECTIVES_GROUP = "simpy_astra.collectives"
TOPOLOGIES_GROUP = "simpy_astra.topologies"
class PluginError(ValueError):
    """A plugin name that cannot be imported or is not what it must be (one line).

    ``original`` is the exception the user's own code raised, if that is the cause: the CLI
    prints its traceback with ``--debug`` (it is the user's bug, not ours)."""

    def __init__(self, message: str, original: BaseException | None = None) -> None:
        super().__init__(message)
        self.original = original


#: how a user's error line says where its traceback is (a sweep point's names another way)
DEBUG_HINT = "--debug shows its traceback"
#: what an unknown short name (a backend, topology or algorithm) may be missing
NOT_LOADED_HINT = ("one your plugin module registers needs that module loaded first: plugins: [MODULE], "
                   "--plugin MODULE, or from Python import MODULE")


def user_code_problem(what: str, exc: BaseException) -> str:
    """One line for an exception the user's code raised: what raised it, where, and how to see
    the traceback (``what``: "plugin module 'my_algos'", "collective 'pkg.mod:fn'", ...)."""
    # deferred: only a failing user module needs traceback; a clean run does not load it
    import traceback

    if isinstance(exc, SyntaxError):
        at, message = f"{exc.filename}:{exc.lineno}", exc.msg
    else:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if _theirs(f.filename)]
        # the line of theirs that made the call, not simpy's or networkx's that raised:
        # env.timeout(-1) in an algorithm was said to be "at .../simpy/events.py:237"
        frames = [f for f in frames if is_users_file(f.filename)] or frames
        # none of theirs: the call itself failed (a TypeError of parameters that do not fit)
        at = (f"{frames[-1].filename}:{frames[-1].lineno}" if frames
              else "the call, before any line of it ran: check its parameters against the docs")
        message = " ".join(str(exc).split()) or "no message"
    if isinstance(exc, SystemExit):
        return (f"{what} called sys.exit({exc.code!r}) (at {at}); a plugin must raise an exception "
                f"(or return), not end the run")
    return (f"{what} raised {type(exc).__name__}: {message} (at {at}); this is an error in that "
            f"code, not in simpy-astra: {DEBUG_HINT}")


def class_call(fn: Any) -> Any:
    """The ``__call__`` a callable instance runs (its class's function), else None (a function,
    a method, a class or a builtin has code of its own, or none to find)."""
    if inspect.isroutine(fn) or inspect.isclass(fn) or hasattr(fn, "__code__"):
        return None
    call = inspect.getattr_static(type(fn), "__call__", None)  # the class's own, as calling it runs
    return call if inspect.isfunction(call) else None


def _static_call(fn: Any) -> Any:
    """The function a callable instance's class runs where its ``__call__`` is a staticmethod or
    a classmethod (which :func:`class_call`, a method taking the instance, leaves out), else None."""
    if inspect.isroutine(fn) or inspect.isclass(fn) or hasattr(fn, "__code__"):
        return None
    call = inspect.getattr_static(type(fn), "__call__", None)
    return call.__func__ if isinstance(call, staticmethod | classmethod) else None


def call_makes(fn: Any) -> str | None:
    """'a generator function', 'an async function' or 'an async generator function' where
    calling ``fn`` (a function, a partial of one, or an object whose class's ``__call__`` is
    one) makes a generator or asyncio's object rather than running its lines, else None: the
    one rule every registry and watcher reads (a watcher or generator of that kind ran none
    of its lines)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    for f in (fn, class_call(fn), _static_call(fn)):
        if inspect.isgeneratorfunction(f):
            return "a generator function"
        if inspect.iscoroutinefunction(f):
            return "an async function"
        if inspect.isasyncgenfunction(f):
            return "an async generator function"
    return None


def asyncio_kind(fn: Any) -> str | None:
    """:func:`call_makes` where it is asyncio's (``async def``): nothing in a SimPy run awaits
    it, so none of its lines would run (a collective, a callback, a model's or a backend's
    method), else None (a generator function is a SimPy process, where one is asked for)."""
    made = call_makes(fn)
    return None if made == "a generator function" else made


def unfit_call(fn: Any, *args: Any, **kwargs: Any) -> str | None:
    """``fn`` as it reads (``name(params)``) when it cannot be called with ``args`` (and
    ``kwargs``) as the run will call it, else None: a registry checks a plug-in's function when it is registered, since
    a TypeError at the call names no line of the plug-in's. A builtin has nothing to read: None."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*args, **kwargs)
    except TypeError:
        return f"{getattr(fn, '__qualname__', fn)}{signature}"
    return None


def users_int(value: Any) -> Any:
    """An integer user code computed as another type (numpy's ``int64``: a peer, a size, a hop
    count) as the int it is; anything else as it is, for the caller's check to refuse."""
    if isinstance(value, int):
        return value
    try:
        return operator.index(value)
    except TypeError:
        return value


def engine_original(exc: BaseException) -> BaseException:
    """The exception a simulated process raised, with its traceback through the code that
    raised it: SimPy re-raises a failed process as a copy whose ``__cause__`` is the original
    (the copy's traceback ends in SimPy, hiding whose code it was)."""
    cause = exc.__cause__
    while cause is not None and type(cause) is type(exc) and cause.args == exc.args:
        exc, cause = cause, cause.__cause__
    return exc


def users_entry(exc: BaseException) -> str | None:
    """Who, in the user's code, simpy-astra called when ``exc`` was raised: ``link model
    'mod:Class', method hold_ns()`` (a model or topology method: the first of the user's frames
    has ``self``), ``function 'mod:fn'``; None when no frame is the user's."""
    tb = exc.__traceback__
    while tb is not None and not is_users_file(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return None if tb is None else _entered(tb.tb_frame)


def raised_in_users_code(exc: BaseException) -> bool:
    """Whether the innermost frame of ``exc`` is the user's own code (a plugin module), not
    simpy-astra, the standard library or an installed package."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and is_users_file(frames[-1].filename)


def users_failure(exc: BaseException) -> str | None:
    """One line for an exception the user's own code raised while a run called it (a link
    model's ``hold_ns``, a backend's ``message_delay_ns``), naming the class, method and line;
    None when it is not theirs. A sweep point records it as ``run`` prints it."""
    original = engine_original(exc)  # a simulated process's failure, as it was raised
    if not raised_in_users_code(original):
        return None
    return user_code_problem(users_entry(original) or "your code", original)


def users_inner_entry(exc: BaseException) -> str | None:
    """Like :func:`users_entry`, for the user's code that the user's own code reached through
    simpy-astra (an algorithm's ``ctx.send`` asking a backend, link model or topology of theirs
    for a delay): the last entry into the user's code, when there were several; else None."""
    entries, inside = [], False
    tb = exc.__traceback__
    while tb is not None:
        users = is_users_file(tb.tb_frame.f_code.co_filename)
        if users and not inside:
            entries.append(tb.tb_frame)
        inside, tb = users, tb.tb_next
    return _entered(entries[-1]) if len(entries) > 1 else None


def _entered(frame: Any) -> str:
    """The user's function or method that ``frame`` runs, as :func:`users_entry` names it."""
    owner = frame.f_locals.get("self")
    module = frame.f_globals.get("__name__", "?")
    if frame.f_code.co_name == "<module>":
        return f"module '{module}' (while imported)"
    if owner is None:
        return f"function '{module}:{frame.f_code.co_name}'"
    return f"{model_kind(owner)} '{class_name(type(owner))}', method {frame.f_code.co_name}()"


def is_ours(obj: Any) -> bool:
    """Whether ``obj`` (a class, function or method) is simpy-astra's own code, held to its
    contract by the project's tests, not a user's plug-in, whose calls are checked and may
    raise. The one rule every "is this theirs?" asks: by the module that defined it (one
    without a module, a builtin's bound method, counts as theirs: it is checked)."""
    module = getattr(obj, "__module__", None)
    return isinstance(module, str) and module.startswith("simpy_astra.")


def class_name(cls: type) -> str:
    """``module:Class``, as a config names it."""
    return f"{cls.__module__}:{cls.__qualname__}"


def model_kind(obj: Any) -> str:
    """What a user's object is to a run, in words: what its base class says it is
    (``MODEL_KIND``: a link or switch model), else topology or class."""
    kind = getattr(type(obj), "MODEL_KIND", None)
    if isinstance(kind, str):
        return kind
    return "topology" if hasattr(obj, "npus_count") else "class"


def bad_return(obj: Any, method: str, value: Any, want: str) -> PluginError:
    """The error for a user's model method that returned what the contract does not allow."""
    return PluginError(f"{model_kind(obj)} '{class_name(type(obj))}': {method}() returned {shown(value)}; "
                       f"it must return {want}")


#: the memory address in CPython's default repr (``<generator object f at 0x7f3a...>``)
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def shown(value: Any, width: int | None = None) -> str:
    """``repr(value)`` for an error line, cut to ``width`` characters if given, without the
    memory address a default repr holds: with it, one input's error differed from run to run."""
    text = _ADDRESS.sub("", repr(value))
    return text if width is None or len(text) <= width else text[: width - 3] + "..."


def serving_loop(element: Any) -> Any:
    """``element.run()``, held to being a generator (a model's serving loop): a ``run`` written
    without a ``yield`` was SimPy's bare 'None is not a generator'. A ``run`` of the user's own
    is also held to letting time pass (:func:`instants_pass`); ours (a user's model that keeps
    the base's loop included) always do and run as they are."""
    loop = element.run()
    if not inspect.isgenerator(loop):
        raise bad_return(element, "run", loop, "a generator: run() is the serving loop, a generator function "
                         "with a yield (one that serves from processes of its own: `return` then `yield`)")
    if not users_method(type(element), "run"):
        return loop
    return instants_pass(element.env, loop, f"{model_kind(element)} '{class_name(type(element))}', method run()",
                         "wait for what it serves (yield self.env.timeout(t) with t > 0, or an event that offer() "
                         "fires)")


def users_method(cls: type, name: str) -> bool:
    """``cls.name`` is the user's own code (a method their class defines), not one of ours it
    inherits (a user's subclass of a built-in model keeps our checked methods as they are):
    :func:`is_ours` of the method, where ``cls`` has one."""
    method = getattr(cls, name, None)
    return method is not None and not is_ours(method)


def instants_pass(env: Any, loop: Any, who: str, fix: str,
                  after_step: Callable[[], None] | None = None) -> Any:
    """``loop``, a generator of the user's run as a SimPy process (a model's serving loop, a
    co-simulation process), step by step, stopped in one line naming ``who`` and ``fix`` once
    it is resumed too often in one instant by what it polls (a timer, or an event that had
    happened when it yielded it): a loop that polls with ``env.timeout(0)`` holds the clock
    there for ever, and the stall watchdog, which wakes at later instants, never runs (the run
    hung). A wait for what comes (the next item of a ``sim.stream``, however many a burst
    brings) is not counted. A collective is held to the same count. Costs a generator step per
    resume of the user's loop (300 ns beside SimPy's 1.2 us to resume a process); our loops
    are not wrapped. ``after_step()``, if given, is called after each step of ``loop`` (to
    hold the processes that step started to the same rule)."""
    guard = ZeroTimeGuard()
    value: Any = None
    error: BaseException | None = None
    polled = False  # what it waited on was a timer or had happened already: nothing it awaited came
    while True:
        if guard.resumed(env.now, counts=polled):  # a wait for what came (a stream's item) is no poll
            frame = loop.gi_frame  # where it yields: the loop's line
            at = f" (at {frame.f_code.co_filename}:{frame.f_lineno})" if frame is not None else ""
            loop.close()
            raise PluginError(guard.problem(who, "a loop that polls with env.timeout(0) (or yields an event it "
                                            "already waited on)", fix, at=at))
        try:
            event = loop.send(value) if error is None else loop.throw(error)
        except StopIteration as stop:
            return stop.value
        finally:
            if after_step is not None:
                after_step()
        polled = isinstance(event, Timeout) or getattr(event, "callbacks", ()) is None
        try:
            value, error = (yield event), None
        except GeneratorExit:
            loop.close()
            raise
        except BaseException as exc:  # an Interrupt (a change of speed), a failed event: theirs to catch
            value, error = None, exc


#: simpy-astra's own folders (its top-level packages included)
_OURS = tuple(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), name) + os.sep
              for name in ("simpy_astra", "collectives", "topologies", "workloads"))


@cache
def _stdlib() -> str:
    """The standard library's folder: sysconfig expands it anew on every call (200 µs)."""
    # deferred: only the user's code needs sysconfig; a clean run of ours does not load it
    import sysconfig

    return sysconfig.get_paths()["stdlib"] + os.sep


def _theirs(filename: str) -> bool:
    """A traceback frame in the user's code: not the import machinery, not simpy-astra's own
    modules (its top-level folders included), not the standard library."""
    if filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    return not path.startswith(_OURS) and not path.startswith(_stdlib())


def is_users_file(filename: str) -> bool:
    """A file of the user's own code: not ours, not the standard library, not an installed
    package (a bug in simpy or networkx is not the user's either)."""
    parts = os.path.abspath(filename).split(os.sep)
    return _theirs(filename) and "site-packages" not in parts and "dist-packages" not in parts


#: folders searched for user modules after the working directory: those of the scenarios
#: read so far (a scenario's ``plugins`` sit beside it, wherever it is run from)
SEARCH_FOLDERS: list[str] = []


def search_also(folder: str) -> None:
    """Import user modules from ``folder`` too (after the working directory)."""
    folder = os.path.abspath(folder)
    if folder not in SEARCH_FOLDERS:
        SEARCH_FOLDERS.append(folder)


def stop_searching(folder: str) -> None:
    """Search ``folder`` no more (a sweep point's temporary folder, gone once it is read: a
    sweep of thousands of points would otherwise leave thousands of dead folders on sys.path)."""
    folder = os.path.abspath(folder)
    if folder in SEARCH_FOLDERS:
        SEARCH_FOLDERS.remove(folder)
    while folder in sys.path:
        sys.path.remove(folder)


def _module_fix(name: Any, attribute: str = "") -> str:
    """How to name the module a path-like ``name`` meant (``./myplug`` -> ``myplug``,
    ``sub/m.py`` -> ``sub.m``), with ``:attribute`` when the spec named one (``m.py:SPEC`` ->
    ``m:SPEC``, not ``m``, which names no registered object): a module is named from a folder
    searched (the working directory, a scenario's), without ``./`` or ``.py``."""
    path = os.path.normpath(name[:-3] if name.endswith(".py") else name) if isinstance(name, str) and name else ""
    if not path or os.path.isabs(path) or path.split(os.sep)[0] in ("..", ".") or path.startswith("."):
        return (f"write it as {_spec('package.module', attribute)} (a module of the working directory, a "
                f"scenario's folder or the installed packages)")
    return f"write it as {_spec(path.replace(os.sep, '.'), attribute)} (a module is named without ./ or .py)"


def _spec(module: str, attribute: str) -> str:
    """``module:attribute``, or ``module`` alone for a plug-in module named by itself."""
    return f"{module}:{attribute}" if attribute else module


def import_module(name: str, attribute: str = "") -> Any:
    """Import a user module by name: from the working directory first, then the installed
    packages, then the folders of :data:`SEARCH_FOLDERS` (a scenario's own folder). Whatever
    the module does while importing (raise, have a syntax error, call sys.exit) is reported as
    the module's error. ``attribute``: what a ``module:attribute`` spec takes from it, kept in
    the fix of a module named by its file."""
    if not isinstance(name, str) or not name or name.startswith(".") or "/" in name:
        raise PluginError(f"{name!r} is not a module name; {_module_fix(name, attribute)}")
    if name.endswith(".py") and any(os.path.isfile(os.path.join(f, name)) for f in (os.getcwd(), *SEARCH_FOLDERS)):
        # not imported: 'loggp.py' would run loggp as package 'loggp', then fail on its module 'py'
        raise PluginError(f"'{name}' is a file name, not a module's: write it as {_spec(name[:-3], attribute)}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    for folder in SEARCH_FOLDERS:  # last: a scenario's folder never shadows an installed package
        if folder not in sys.path:
            sys.path.append(folder)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (name == missing or name.startswith(missing + ".")):
            if name.endswith(".py"):  # a file's name, not its module's
                raise PluginError(f"'{name}' is a file name, not a module's: write it as {_spec(name[:-3], attribute)}") from None
            where = ", ".join(["the working directory", *SEARCH_FOLDERS])
            raise PluginError(f"cannot import plugin module '{name}' (no module named '{missing}'; "
                              f"searched {where} and the installed packages)") from None
        raise PluginError(user_code_problem(f"plugin module '{name}'", exc), exc) from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's module failed, say so
        raise PluginError(user_code_problem(f"plugin module '{name}'", exc), exc) from None


def module_files(name: str, also: list[str] = ()) -> list[str]:
    """The source files of user module ``name`` as :func:`import_module` would find it (the
    working directory, the installed packages, :data:`SEARCH_FOLDERS` and ``also``), found
    without running it: its file, or every ``.py`` file of a package, and those of the user's
    modules they import (a ``shapes.py`` beside it: an edited helper changes the figures as
    surely as the module). Empty when it is not found, or is not the user's own code (an
    installed package, one of ours)."""
    found: set[str] = set()
    todo, seen = [name], set()
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        for path in _own_files(module, also):
            if path not in found:
                found.add(path)
                todo += _imported_names(path)
    return sorted(found)


def _own_files(name: str, also: list[str]) -> list[str]:
    """:func:`module_files` of ``name`` alone, without what it imports."""
    if not isinstance(name, str) or not name or name.startswith(".") or "/" in name:
        return []
    extra = [os.getcwd(), *SEARCH_FOLDERS, *also]
    search: list[str] | None = [extra[0], *sys.path, *(f for f in extra[1:] if f not in sys.path)]
    files: list[str] = []
    parts = name.split(".")
    for i in range(len(parts)):  # each package on the way is run on import too: its __init__
        spec = PathFinder.find_spec(".".join(parts[: i + 1]), search) if search is not None else None
        if spec is None or not spec.origin or not os.path.isfile(spec.origin):
            return []
        files.append(spec.origin)
        search = list(spec.submodule_search_locations or []) or None
    for folder in spec.submodule_search_locations or []:  # a package named itself: all of it
        files += [os.path.join(d, f) for d, _, names in os.walk(folder) for f in names if f.endswith(".py")]
    return sorted({os.path.abspath(f) for f in files if is_users_file(f)})


def _imported_names(path: str) -> list[str]:
    """The modules a source file imports by absolute name (``import a.b``, ``from a import b``:
    ``a``, ``a.b``); a relative import is of its own package, whose files are counted whole."""
    import ast

    try:
        tree = ast.parse(Path(path).read_bytes(), path)
    except (OSError, SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*")]
    return names


def remember_imported_code() -> None:
    """Count every imported module of the user's among the run's inputs (an output may not
    replace a plug-in, a networkx builder or a model the run imported): the modules outside
    simpy-astra, the standard library and the environment's installed packages."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    skip = tuple({os.path.join(root, name) + os.sep for name in ("simpy_astra", "collectives", "topologies",
                                                                 "workloads")}
                 | {os.path.abspath(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                                          sys.base_exec_prefix)})
    for module in list(sys.modules.values()):  # a string test first: a stat only for the user's files
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path.endswith(".py") and not path.startswith(skip):
            files.remember_input(path)


def import_object(spec: str) -> Any:
    """``package.module:attribute`` -> the attribute."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise PluginError(f"'{spec}' is not of the form package.module:attribute")
    module = import_module(module_name, attr)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise PluginError(f"module '{module_name}' has no attribute '{attr}'") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a module __getattr__ of theirs
        raise PluginError(user_code_problem(f"'{spec}'", exc), exc) from None


@cache
def _installed_entry_points() -> Any:
    """Every installed package's entry points, read once (a scan of every package's metadata:
    one scan for all our groups, not one per group)."""
    return entry_points()


@cache
def _entry_points(group: str) -> dict[str, Any]:
    return {ep.name: ep for ep in _installed_entry_points().select(group=group)}


#: (group, name) of the entry points loaded into a registry, under their own name
_LOADED: set[tuple[str, str]] = set()


def forget_entry_points() -> None:
    """Read the installed packages' entry points again at the next look-up (a package
    installed since, as a test installs one)."""
    _installed_entry_points.cache_clear()
    _entry_points.cache_clear()
    _LOADED.clear()


def from_entry_point(group: str, name: str) -> Any | None:
    """The object an installed package registered under ``name`` in ``group``, if any."""
    ep = _entry_points(group).get(name)
    if ep is None:
        return None
    declared = sorted({(_dist_name(e), e.value) for e in _installed_entry_points().select(group=group, name=name)})
    if len({value for _, value in declared}) > 1:  # the one read last on sys.path ran, in silence
        both = " and ".join(f"{dist} ({value})" for dist, value in declared)
        raise PluginError(f"entry point '{name}' of {group} is declared by {both}: which runs would depend on the "
                          f"order of sys.path; uninstall one, or name it as module:attribute in the config")
    _LOADED.add((group, name))
    try:
        return ep.load()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a broken third-party package: say which one
        what = f"entry point '{name}' of {group} ({ep.value})"
        missing = _missing_target(ep.value)
        if missing:  # no line of theirs ran: the package points at what it does not hold
            dist = getattr(getattr(ep, "dist", None), "name", None) or "the package"
            version = getattr(getattr(ep, "dist", None), "version", "")
            raise PluginError(f"{what}, declared by the installed package {dist} {version}, {missing}; reinstall "
                              f"{dist} or fix its entry point") from None
        raise PluginError(user_code_problem(what, exc), exc) from None


def _dist_name(ep: Any) -> str:
    return getattr(getattr(ep, "dist", None), "name", None) or "an installed package"


def refuse_shadowed_entry_point(group: str, name: str, taken: Any) -> None:
    """Refuse ``name``, which a registry gives to ``taken`` (ours, or a plug-in module's), when
    an installed package also declares an entry point of that name in ``group``: the registry
    is asked first, so the package's object would never run and the config would run
    ``taken`` in its place, in silence. A registered name is refused the same way
    (:func:`claim`); one the entry point itself registered is its own."""
    ep = _entry_points(group).get(name)
    if ep is None or (group, name) in _LOADED:
        return
    dist = _dist_name(ep)
    whose = "simpy-astra's own" if origin(taken).startswith("simpy_astra.") else "the registered"
    raise PluginError(f"entry point '{name}' of {group} ({ep.value}), declared by {dist}, has the name of "
                      f"{whose} {origin(taken)}, which '{name}' runs: the entry point would never run; rename it "
                      f"in {dist}, or name it as {ep.value} in the config")


def _missing_target(value: str) -> str | None:
    """What of an entry point's ``module:attribute`` is not there (its module cannot be found,
    or lacks the attribute), in words; None when the target is there and its own code failed."""
    module, _, attr = (part.strip() for part in value.partition(":"))
    try:
        obj = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        gone = exc.name is not None and (module == exc.name or module.startswith(exc.name + "."))
        return f"whose module '{module}' cannot be imported ({exc})" if gone else None
    except (Exception, SystemExit):  # noqa: BLE001 - their module's own error: reported as theirs
        return None
    for part in attr.split(".") if attr else ():
        if not hasattr(obj, part):
            return f"whose module '{module}' has no attribute '{attr}'"
        obj = getattr(obj, part)
    return None


def entry_point_names(group: str) -> list[str]:
    return sorted(_entry_points(group))
