"""simpy-astra: a SimPy simulator of distributed ML training, figure-compatible with ASTRA-sim 2.0.

The building blocks live in top-level folders of the source tree (``collectives/``,
``topologies/``, ``workloads/``: the layout is part of the design) but are packages of this
namespace, ``simpy_astra.collectives`` etc.: setup.cfg's ``package_dir`` maps them, so a wheel
installs them inside ``simpy_astra/`` (nothing generic lands in site-packages) and an editable
install (``pip install -e .``, the README's) finds them in the checkout. Their imports are plain
ones that tools can follow; a checkout that is not installed says so when run
(``python -m simpy_astra``).
"""

__version__ = "0.1.0"
