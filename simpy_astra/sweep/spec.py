"""The sweep YAML: a base scenario, axes over dotted paths into it, constraints, an objective.

Schema::

    name: quick                          # optional
    base: ../torus3d_all_reduce.yaml     # a scenario file, or an inline scenario mapping
    axes:                                # dotted path into the scenario -> values
      network.bandwidth: [50, 100, 200]  # a list (a scalar on a per-dimension list fills every dim)
      system.preferred-dataset-splits: {powers_of_two: [1, 16]}
      system.endpoint-delay: {from: 10, to: 30, step: 10}    # inclusive range
      workload.dp: {values: [1, 2], as: data_parallel}       # explicit name in expressions
      machine:                           # named bundles: one coordinate sets several fields
        named:
          system1: {network.bandwidth: 100, system.peak-perf: 450}
          system2: {network.bandwidth: 2000, system.peak-perf: 45}
    constraints:                         # over coordinates: filter points before running;
      - dp*tp*pp*sp == 64                # naming a result: filter results for best.json
      - peak_memory_gb <= 80
    minimise: finish_ns                  # default; any expression over results and coordinates
    report: [finish_ns, peak_memory_gb]  # figures (or expressions) in the terminal table

Expressions name an axis by the last part of its path with ``-`` as ``_`` (``dp``,
``all_reduce_implementation``), or by its ``as:`` name; a named-bundle axis by its key. They
are checked before any point runs (``expressions.py``: allowed operations, bounded integers;
``minimise`` and ``report`` must give numbers). Axis values must be finite (no .nan/.inf), a
range may span at most ``MAX_POINTS`` values, and repeated values (``[50, 50.0]``) count once.
A ``backend`` axis (or base field) splits best.json per backend (``best.py``).
"""

from __future__ import annotations

import copy
import glob
import hashlib
import itertools
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simpy_astra.config.key_homes import key_home
from simpy_astra.config.scenario import SCENARIO_KEYS
from simpy_astra.config.unknown_keys import refuse_label_values, refuse_unknown_keys
from simpy_astra.errors import InputError
from simpy_astra.infra.files import path_like_strings
from simpy_astra.infra.sweep_outputs import refuse_sweep_output
from simpy_astra.network.backends import DEFAULT_BACKEND, registered_name
from simpy_astra.plugins import module_files
from simpy_astra.sweep.axes import MAX_POINTS, Axis, one_line, point_words
from simpy_astra.sweep.axis_paths import megatron_args_of
from simpy_astra.sweep.base_scenario import FILE_KEYS, absolute_preset, load_yaml, resolve_base, set_path
from simpy_astra.sweep.cluster_loads import ClusterLoads
from simpy_astra.sweep.expressions import Expression, type_mismatch
from simpy_astra.sweep.megatron_args import flag_values, is_args_path, set_flag
from simpy_astra.sweep.point_job import point_job
from simpy_astra.sweep.result_names import DEFAULT_REPORT, HIGHER_IS_BETTER, RESULT_NAMES, TRAINING_NAMES
from simpy_astra.sweep.same_run import AlikePoints, SameRun
from simpy_astra.sweep.spec_axes import check_axis_values, read_axes
from simpy_astra.sweep.spec_goals import Goals, read_goals
from simpy_astra.sweep.validity import JobVerdict, job_verdict
from simpy_astra.workloads.generated import GENERATORS

SPEC_KEYS = {"name", "description", "base", "axes", "constraints", "minimise", "report", "memory_cap_gb"}


@dataclass(frozen=True)
class Point:
    key: str  # stable hash of the coordinates
    coordinates: dict[str, Any]  # axis column -> value
    scenario: dict[str, Any]  # the full scenario mapping, paths absolute
    #: a Megatron point's modelled flags by expression name (``tensor_model_parallel_size``)
    flags: dict[str, Any] = field(default_factory=dict, compare=False)
    #: how every line names it, ``tp=4 pp=2 vp=off`` (:func:`~simpy_astra.sweep.axes.point_words`),
    #: and in fewer columns, its words' values without their names (``bandwidth=50 ring``)
    label: str = field(default="", compare=False)
    terse: str = field(default="", compare=False)
    #: what its Megatron job, parsed once as it was expanded, refuses (None: nothing, or no
    #: Megatron job on a GPU count); the job itself is not kept (4.4 KB a point)
    megatron: JobVerdict | None = field(default=None, compare=False)

    def names(self, axes: list[Axis]) -> dict[str, Any]:
        return {**self.flags, **{a.name: self.coordinates[a.column] for a in axes}}

    def where(self, sweep: str) -> str:
        """What the point's errors and warnings name: :func:`point_label`."""
        return point_label(sweep, self.coordinates)

    @property
    def backend(self) -> str:
        """The network backend that measured this point (points of two backends are not compared),
        by its registered name however the point spelt it."""
        return registered_name(str(self.scenario.get("backend") or DEFAULT_BACKEND))


def point_label(sweep: str, coordinates: dict[str, Any]) -> str:
    """What a point's errors and warnings name: the sweep file and the coordinates, as results.csv
    keeps them (the summary, which names the point already, takes this off), each value as the
    sweep file writes it: ``nccl_algo=null``, ``nvls=true`` (Python's None and True named no
    value a user wrote)."""
    return f"{sweep}: point " + " ".join(f"{c}={_written(v)}" for c, v in coordinates.items())


def _written(value: Any) -> str:
    """A coordinate as YAML writes it: null, true and false, else as it reads."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    return str(value)


def _names_a_file(dotted: str) -> bool:
    """Whether an axis on ``dotted`` sets a whole file: the scenario's workload, system,
    network, remote memory or communicator groups, or a job's workload, system or groups
    (``jobs.1.system``), whose relative paths resolve from the sweep's folder as ``run``'s
    from the scenario's."""
    parts = dotted.split(".")
    return dotted in ("workload", *FILE_KEYS) or (
        len(parts) == 3 and parts[0] == "jobs" and parts[2] in ("workload", "system", "comm_groups"))


@dataclass
class SweepSpec:
    path: str
    name: str
    base: dict[str, Any]
    axes: list[Axis]
    #: constraints, objective, report and memory cap (:func:`~simpy_astra.sweep.spec_goals.read_goals`)
    goals: Goals
    #: where the points' user modules (plugins, module:attribute names) are found after the
    #: working directory: the base scenario's folder, then the sweep file's (a point runs from
    #: a temporary folder)
    module_folders: tuple[str, ...] = ()
    #: one line per key of the sweep YAML no reader uses (printed before the points run)
    warnings: list[str] = field(default_factory=list)
    #: the points :meth:`points` left out as ones that run another's step, and every point's
    #: key in sweep order, theirs too (results.csv gives each a row)
    same_runs: list[SameRun] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    #: (folder, string) -> the files it names; module name -> its source files (looked up once)
    _resolved: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict, repr=False, compare=False)
    _modules: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False, compare=False)
    _flag_cache: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False, compare=False)

    def fingerprint(self) -> str:
        """What gives a coordinate its meaning; results from a different one cannot be mixed."""
        text = json.dumps({"base": self.base, "axes": [(a.column, a.bundles) for a in self.axes]},
                          sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def named_files(self) -> list[str]:
        """Every file the base scenario or an axis names (configs, ET traces of a prefix, a
        generator's input), sorted: editing one changes every figure, so a resumed sweep must
        notice it by its contents (:class:`~simpy_astra.sweep.inputs.InputSnapshot`), not
        only a changed path."""
        sweep_dir = os.path.dirname(os.path.abspath(self.path))
        found = self._paths_in(self.base, os.getcwd())
        for axis in self.axes:
            found |= self._paths_in(_values_of(axis), sweep_dir)
        found.update(self.plugin_files())
        return sorted(found)

    def files_of(self, point: Point) -> list[str]:
        """The files one point uses (a subset of :meth:`named_files`): those its scenario and its
        axis values name, and the user modules it loads."""
        sweep_dir = os.path.dirname(os.path.abspath(self.path))
        found = self._paths_in(point.scenario, os.getcwd())
        found |= self._paths_in([point.coordinates[a.column] if a.bundles is None else a.bundles[point.coordinates[a.column]]
                                 for a in self.axes], sweep_dir)
        found |= self.plugin_files([point.scenario], plugin_axes=())
        return sorted(found)

    def _paths_in(self, value: Any, base_dir: str) -> set[str]:
        """The existing files the strings in ``value`` name (a path, or an ET prefix's ranks);
        what a path resolves to is looked up once per sweep (points repeat the same strings)."""
        found: set[str] = set()
        for text in path_like_strings(value):
            key = (base_dir, text)
            if key not in self._resolved:
                path = os.path.abspath(os.path.join(base_dir, text))
                self._resolved[key] = (path,) if os.path.isfile(path) else \
                    tuple(glob.glob(glob.escape(path) + ".*.et"))
            found.update(self._resolved[key])
        return found

    def plugin_files(self, documents: list[Any] | None = None, plugin_axes: tuple[Axis, ...] | None = None) -> set[str]:
        """The source of every user module the points load: the base's and the axes' ``plugins``
        and each ``module:attribute`` a config names (or those ``documents`` name). An edited
        plug-in changes the figures as surely as an edited config (issue 39: a resume reused
        every row)."""
        names: set[str] = set()

        def visit(value: Any, under_plugins: bool) -> None:
            if isinstance(value, dict):
                for k, v in value.items():
                    visit(v, k == "plugins")
            elif isinstance(value, list):
                for v in value:
                    visit(v, under_plugins)
            elif isinstance(value, str):
                if under_plugins:
                    names.add(value)
                elif PLUGIN_SPEC.fullmatch(value):
                    names.add(value.split(":", 1)[0])

        for document in [self.base] if documents is None else documents:
            visit(document, False)
        for axis in self.axes if plugin_axes is None else plugin_axes:
            visit(_values_of(axis), axis.column == "plugins" or axis.column.startswith("plugins."))
        folders = list(self.module_folders) or [os.path.dirname(os.path.abspath(self.path))]
        files: set[str] = set()
        for name in sorted(names):
            if name not in self._modules:
                self._modules[name] = tuple(module_files(name, folders))
            files.update(self._modules[name])
        return files

    def points(self, progress: Callable[[int, int], None] | None = None,
               check: Callable[[Point, Any], None] | None = None) -> list[Point]:
        """Every point of the axes the point constraints keep; ``progress(done, total)`` is
        told how far the expansion got (every 64 combinations; each, with ``check``).
        ``check(point, job)``: each point that joins the points, with its Megatron job (None:
        none, or refused) while it is at hand (``--list`` loads the point then)."""
        total = 1
        for axis in self.axes:
            total *= len(axis.values)
        if total > MAX_POINTS:
            raise InputError(f"{self.path}: axes span {total:,} points (more than {MAX_POINTS:,}); "
                             f"narrow the axes")
        clusters = ClusterLoads()  # each cluster the points name, loaded once for the jobs and alike points
        seen, first, alike = set(), {}, AlikePoints(clusters)
        for done, combo in enumerate(itertools.product(*(a.values for a in self.axes))):
            if progress is not None and (done % 64 == 0 or check is not None):
                progress(done, total)
            coords = {a.column: v for a, v in zip(self.axes, combo, strict=True)}
            names = {a.name: v for a, v in zip(self.axes, combo, strict=True)}
            key = point_key(coords)
            if key in seen:
                continue
            seen.add(key)
            scenario = self._scenario_for(coords)
            flags = self._flags(scenario)
            values = {**flags, **names}
            # a name the point lacks (data_parallel_size of a layout that does not divide the GPUs)
            # cannot judge it: the point stays, and shows why it cannot run
            first = first or values
            if all(not f.names <= values.keys() or self._keeps(f, values, coords) for f in self.goals.point_filters):
                where = point_label(self.path, coords)
                found = point_job(scenario, where, clusters)
                job = None if found is None else found.job
                point = Point(key, coords, scenario, flags, " ".join(point_words(self.axes, coords)),
                              " ".join(point_words(self.axes, coords, terse=True)), job_verdict(found, where))
                if alike.add(point, job) and check is not None:
                    check(point, job)
        self.warnings += [said for said in alike.warnings() if said not in self.warnings]
        self.same_runs, self.order = alike.same_runs(), alike.order
        out = alike.points
        for f in self.goals.point_filters if first else ():  # 'model == 3' of an axis of words: never true
            why = f.names <= first.keys() and type_mismatch(f.text, first, self._choices())
            if why and not out:
                raise InputError(f"{self.path}: constraints: '{f.text}' leaves no point to run: it {why}")
            if why and f"constraints: '{f.text}' {why}" not in self.warnings:
                self.warnings.append(f"constraints: '{f.text}' {why}")
        return out

    def _choices(self) -> dict[str, tuple[Any, ...]]:
        return {a.name: a.values for a in self.axes}

    def _keeps(self, f: Expression, values: dict[str, Any], coords: dict[str, Any]) -> Any:
        """Whether constraint ``f`` keeps the point of ``values``; a comparison of a number with a
        string (``tp > "4"``) is refused saying so, not as Python's TypeError, and a division by
        zero naming the point where it divides (it was Python's ZeroDivisionError alone)."""
        try:
            return f.evaluate(values, f"{self.path}: constraints")
        except InputError as exc:
            if isinstance(exc.__cause__, ZeroDivisionError):
                raise InputError(f"{self.path}: constraints: '{f.text}' divides by zero at the point "
                                 f"{' '.join(point_words(self.axes, coords))}; leave that point out first "
                                 f"(e.g. 'x != 0 and ...', whose 'and' stops there)") from None
            why = type_mismatch(f.text, values, self._choices())
            if why:
                raise InputError(f"{self.path}: constraints: '{f.text}' {why}") from None
            raise

    def _flags(self, scenario: dict[str, Any]) -> dict[str, Any]:
        if not self.goals.flag_names:
            return {}
        args = megatron_args_of(scenario)
        cluster = scenario.get("cluster")
        gpus = cluster.get("gpus") if isinstance(cluster, dict) else None
        text = json.dumps([args, gpus], default=str)
        if text not in self._flag_cache:
            self._flag_cache[text] = flag_values(args, gpus)
        return self._flag_cache[text]

    def check_expressions(self, point: Point) -> None:
        """Evaluate ``minimise``, ``report`` and the result constraints once on a stand-in result
        of ``point`` (every figure 1): an expression that cannot be evaluated, or a ``minimise``
        or ``report`` that can never give a number, is refused before any point runs."""
        values = {**point.names(self.axes), **dict.fromkeys(RESULT_NAMES, 1)}
        where = f"{self.path}: minimise"
        if all(self.goals.objective.number({**values, **dict.fromkeys(RESULT_NAMES, stand_in)}, where) is None
               for stand_in in (1, 2, 3.5, 1e6)):
            raise InputError(f"{where}: '{self.goals.objective.text}' gives no number for any figures (e.g. a "
                             f"division by zero), so no point could be ranked; write an expression over "
                             f"{', '.join(DEFAULT_REPORT[:3])}")
        if not self.goals.objective.names:  # every point ties; the first listed was named best
            raise InputError(f"{where}: '{self.goals.objective.text}' names no figure or axis, so every point would tie "
                             f"and the first be called best; minimise a figure, such as {DEFAULT_REPORT[0]}")
        for i, expr in enumerate(self.goals.report):
            expr.number(values, f"{self.path}: report[{i}]")
        for expr in self.goals.result_constraints:  # undefined whatever the figures: no point could satisfy it
            stand_ins = (1, 2, 3.5, 1e6)
            if all(expr.value({**values, **dict.fromkeys(RESULT_NAMES, x)}, f"{self.path}: constraints") is None
                   for x in stand_ins):
                raise InputError(f"{self.path}: constraints: '{expr.text}' is undefined for any figures (e.g. a "
                                 f"division by zero), so no figures could satisfy it; fix the expression")

    def check_training_figures(self, points: list[Point]) -> None:
        """A ``minimise``, ``report`` or result constraint over a training job's own figures
        (``mfu``, ``iteration_time_ns``) where no point is such a job: every point ran, then the
        sweep ended on 'no number for any point', or showed an empty column, or held no point
        to the constraint. Refused before any point runs."""
        if any(reports_training(p.scenario) for p in points):
            return
        used = self.goals.first_use(set(TRAINING_NAMES))
        if used:
            where, expr, name = used
            raise InputError(f"{self.path}: {where}: '{expr.text}' reads {name}, a figure only a training "
                             f"job reports (workload: {{generate: megatron}} on a cluster:), and no point of this "
                             f"sweep is one, so it would be empty for every point; use "
                             f"{', '.join(DEFAULT_REPORT[:2])}, peak_memory_gb, ...")

    def _scenario_for(self, coords: dict[str, Any]) -> dict[str, Any]:
        doc = copy.deepcopy(self.base)
        sweep_dir = os.path.dirname(os.path.abspath(self.path))
        setter = ""  # the axis that set the workload (or its args) whole, if any
        for axis in self.axes:
            for dotted, value in axis.assignments(coords[axis.column]).items():
                where = f"{self.path}: axes: {axis.column}"
                if dotted in ("workload", "workload.generate", "workload.args"):
                    setter = axis.column
                if _names_a_file(dotted) and isinstance(value, str) and value and not os.path.isabs(value):
                    value = os.path.join(sweep_dir, value)  # a whole file (a point runs from a temporary folder)
                elif dotted == "cluster.preset":
                    value = absolute_preset(value, sweep_dir)
                elif dotted == "cluster" and isinstance(value, dict) and "preset" in value:
                    value = {**value, "preset": absolute_preset(value["preset"], sweep_dir)}
                if is_args_path(dotted):
                    if setter and megatron_args_of(doc) is None:  # the base's were checked on load
                        raise InputError(f"{where}: axis {setter} sets this point's workload to one without "
                                         f"Megatron-LM arguments ({doc.get('workload')!r}); give that axis "
                                         f"megatron workloads, or drop this one")
                    doc["workload"]["args"] = set_flag(doc["workload"].get("args"), dotted, value, where)
                    continue
                set_path(doc, dotted, value, where)
        return doc


def reports_training(scenario: dict[str, Any]) -> bool:
    """Whether a point's run may report a training job's own figures: its generator has a
    ``report`` (Megatron's), or is one not known here yet (a ``module:function``)."""
    workload = scenario.get("workload")
    name = workload.get("generate") if isinstance(workload, dict) else None
    if not isinstance(name, str):
        return False
    entry = GENERATORS.get(name)
    return entry is None or entry.report is not None


#: ``package.module:attribute``, the way a config names a plug-in's algorithm or topology
PLUGIN_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def _values_of(axis: Axis) -> list[Any]:
    """An axis's values as written (each bundle's assignments for a bundle axis)."""
    return list(axis.bundles.values()) if axis.bundles is not None else list(axis.values)


def inputs_digest(digests: dict[str, str]) -> str:
    """One digest of a set of files' contents (path -> digest): what a results row records of
    the inputs it was made from."""
    text = "".join(f"{path}\0{digest}\n" for path, digest in sorted(digests.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def point_key(coords: dict[str, Any]) -> str:
    text = json.dumps(coords, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _scenario_key_home(key: object, value: object) -> str | None:
    """Where a scenario's field written in the sweep file as ``value`` belongs: the base
    scenario, or an axis (over one of its fields where ``value`` is a mapping)."""
    if key == "plugins":
        return "plug-ins are the base scenario's: write plugins: [MODULE] there, or pass sweep --plugin MODULE"
    if key not in SCENARIO_KEYS:
        return None
    part = ".FIELD" if isinstance(value, dict) else ""
    return (f"it is a field of the scenario: set it in the base scenario, or vary it on an axis "
            f"(axes: {{{key}{part}: [VALUES]}})")


def load_sweep(path: str, plugins: tuple[str, ...] = ()) -> SweepSpec:
    """The sweep YAML at ``path``; ``plugins`` (``sweep --plugin``) join the base scenario's
    ``plugins:``, so every point loads them wherever it runs (and they count among its inputs)."""
    doc = load_yaml(path, path, "sweep YAML")
    refuse_sweep_output(path, doc, "sweep")
    if not isinstance(doc, dict):
        got = "is empty (no YAML in it)" if doc is None else f"holds a {type(doc).__name__}, not fields"
        raise InputError(f"{path}: {got}; a sweep is a mapping with base: (a scenario, or its file) and axes: "
                         f"{{FIELD: [VALUES]}}")
    if "axes" not in doc and "base" not in doc and "workload" in doc:  # a scenario given to sweep
        raise InputError(f"{path}: is a scenario (it has workload:), not a sweep; a sweep names it (base: {path}) "
                         f"with axes: {{network.bandwidth: [50, 100]}}, or run it: simpy-astra run {path}")
    for key in doc:  # "did you mean 'minimise'?" of maximise: mfu crowned the worst point
        if isinstance(key, str) and re.fullmatch(r"max(im[iu]m|imi[sz]e)?", key.lower()) and "minimise" not in doc:
            raise InputError(f"{path}: field '{key}' is not a sweep field; a sweep minimises: to maximise "
                             f"{doc[key]}, write minimise: -({doc[key]})")
    refuse_unknown_keys(path, doc, SPEC_KEYS, "sweep", lambda key: _scenario_key_home(key, doc[key]))
    refuse_label_values(path, doc, "sweep")  # a list's text was its name
    warnings: list[str] = []
    if "base" not in doc:
        raise InputError(f"{path}: field 'base' is missing; name a scenario file or inline one")
    axes, axis_paths = read_axes(path, doc.get("axes"), warnings)
    base, base_dir = resolve_base(doc["base"], path, axis_paths)
    if plugins:
        given = base.get("plugins") or []
        base["plugins"] = list(dict.fromkeys([*plugins, *([given] if isinstance(given, str) else given)]))
    name = one_line(str(doc["name"]), f"{path}: name") if doc.get("name") else None
    refuse_unknown_keys(f"{path}: base", base, SCENARIO_KEYS, "scenario", key_home)
    check_axis_values(path, axes, base, axis_paths)
    goals = read_goals(path, doc, axes, base)
    text = goals.objective.text.strip()
    if text in HIGHER_IS_BETTER:  # the best line crowned the slowest layout, as maximise: did
        warnings.append(f"minimise: {text} ranks the point of the lowest {text} best, though more {text} is "
                        f"better; write minimise: -{text} for the highest (or minimise: iteration_time_ns)")
    return SweepSpec(path=path, name=name or os.path.splitext(os.path.basename(path))[0],
                     base=base, axes=axes, goals=goals, warnings=warnings,
                     module_folders=tuple(dict.fromkeys((base_dir, os.path.dirname(os.path.abspath(path))))))
