"""simpy-astra: a SimPy simulator of distributed ML training, figure-compatible with ASTRA-sim 2.0.

The building blocks live in top-level folders of the source tree (``collectives/``,
``topologies/``, ``workloads/``: the layout is part of the design) but are packages of this
namespace, ``simpy_astra.collectives`` etc.: a wheel installs them inside ``simpy_astra/``
(setup.cfg's ``package_dir``) so nothing generic lands in site-packages. Run from a source
checkout without installing, exactly these three folders are found next to this package (and
nothing else of the checkout becomes part of the namespace).
"""

import os as _os
import sys as _sys

__version__ = "0.1.0"

_SOURCE_FOLDERS = ("collectives", "topologies", "workloads")


class _SourceTreeFolders:
    """Finds ``simpy_astra.<folder>`` in a source checkout's top-level folder of that name."""

    def __init__(self, tree: str) -> None:
        self.folders = {f"{__name__}.{name}": _os.path.join(tree, name) for name in _SOURCE_FOLDERS}

    def find_spec(self, name, path=None, target=None):
        folder = self.folders.get(name)
        if folder is None:
            return None
        from importlib.util import spec_from_file_location

        return spec_from_file_location(name, _os.path.join(folder, "__init__.py"),
                                       submodule_search_locations=[folder])


_here = _os.path.dirname(_os.path.abspath(__file__))
_tree = _os.path.dirname(_here)
if not _os.path.isdir(_os.path.join(_here, "collectives")) and _os.path.isfile(
        _os.path.join(_tree, "collectives", "__init__.py")):
    _sys.meta_path.append(_SourceTreeFolders(_tree))
del _here, _tree
