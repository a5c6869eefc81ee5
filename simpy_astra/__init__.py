"""simpy-astra: a SimPy simulator of distributed ML training, figure-compatible with ASTRA-sim 2.0.

The building blocks live in top-level folders of the source tree (``collectives/``,
``topologies/``, ``workloads/``: the layout is part of the design) but are packages of this
namespace, ``simpy_astra.collectives`` etc.: a wheel installs them inside ``simpy_astra/``
(setup.cfg's ``package_dir``) so nothing generic lands in site-packages. Run from a source
checkout without installing, the folders are found next to this package instead.
"""

import os as _os

__version__ = "0.1.0"

_here = _os.path.dirname(_os.path.abspath(__file__))
_tree = _os.path.dirname(_here)
if not _os.path.isdir(_os.path.join(_here, "collectives")) and _os.path.isfile(
        _os.path.join(_tree, "collectives", "__init__.py")):
    # a source checkout: simpy_astra.collectives is <tree>/collectives (likewise the others)
    __path__.append(_tree)  # noqa: F821 - a package's __path__ is set by the import system
del _here, _tree
