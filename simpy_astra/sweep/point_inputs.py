"""A sweep point's scenario read as ``run`` reads a scenario file: by the scenario loader, from a
temporary file whose name its errors then give back as the sweep's and the point's
(:func:`relabel`). Both a point's run (point.py) and ``--list``'s check (validity.py) read it so.
"""

from __future__ import annotations

import copy
import os
import re
import tempfile
from typing import Any

from simpy_astra.config.inputs import SimulationInputs
from simpy_astra.config.scenario import load_scenario
from simpy_astra.plugins import DEBUG_HINT, stop_searching


def relabel(text: str, where: str) -> str:
    """Errors name the temporary files a point is loaded from; name what the user wrote instead:
    ``/tmp/simpy-astra-x/system.json: field 'f'`` -> ``SWEEP: point ...: system: field 'f'``."""
    tmp = re.escape(os.path.realpath(tempfile.gettempdir())) + "|" + re.escape(tempfile.gettempdir())
    text = re.sub(rf"(?:{tmp})/simpy-astra-point-[^/\s]+/scenario\.yaml", where, text)
    # a point's folder among the folders searched for plug-ins: the user never made it
    text = re.sub(rf", (?:{tmp})/(?:simpy-astra-[^/\s,]+/)*?(?:worker-[^/\s,]+/)?simpy-astra-point-[^/\s,)]+(?=[\s,)])",
                  "", text)
    text = text.replace(DEBUG_HINT, "run the point's points/KEY.yaml with --debug for its traceback")  # no --debug here
    return re.sub(rf"(?:{tmp})/simpy-astra-[^/\s]+/(\w+)\.(?:json|yml|yaml)", rf"{where}: \1", text)


def load_point(scenario: dict[str, Any], checking: bool = False) -> SimulationInputs:
    """The inputs of one point, read by the scenario loader as ``run`` reads a scenario file
    (errors name a temporary file: :func:`relabel` them); ``checking``: see load_scenario."""
    with tempfile.TemporaryDirectory(prefix="simpy-astra-point-") as tmp:
        try:  # as read from a file of its own (named in errors), never written: a point's YAML
            # round trip was most of --list's time, and reads back what it wrote
            return load_scenario(os.path.join(tmp, "scenario.yaml"), checking=checking,
                                 doc=copy.deepcopy(scenario))
        finally:  # the loader searches a scenario's folder for its modules; this one goes now
            stop_searching(tmp)
