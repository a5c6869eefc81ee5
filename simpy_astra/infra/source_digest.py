"""What identifies the simulator's behaviour: its version and a digest of its source.

The package version stays 0.1.0 while the code under it changes every day, so results made by
two versions of the simulator could not be told apart. The digest covers every file the
package runs or reads (its modules and the cluster presets it ships), named by where it sits
in the package, so an editable install and an installed wheel of the same source agree and a
changed line anywhere gives another digest. A sweep records it and refuses to add this
simulator's results to a folder that another one made (:mod:`simpy_astra.sweep.store`).
"""

from __future__ import annotations

import functools
import hashlib
import os

#: the packages whose files make up the simulator (setup.cfg installs the last three from
#: top-level folders of the source tree)
PACKAGES = ("simpy_astra", "simpy_astra.collectives", "simpy_astra.topologies", "simpy_astra.workloads")
#: the files that decide what a run does: code and the data it reads (presets); not docs
SUFFIXES = (".py", ".yaml", ".yml", ".json")


def _package_dir(name: str) -> str:
    """The folder of package ``name`` (found, not imported: its parent only)."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:  # an install that lost a package
        raise RuntimeError(f"package {name} is not installed beside simpy_astra; reinstall simpy-astra")
    return os.path.realpath(list(spec.submodule_search_locations)[0])


def source_files() -> list[tuple[str, str]]:
    """(name inside the package, path) of every source file, sorted by name."""
    roots = {name: _package_dir(name) for name in PACKAGES}
    others = set(roots.values())
    out = []
    for name, root in roots.items():
        for folder, subfolders, names in os.walk(root):
            # an installed wheel nests the other packages' folders here: walked under their names
            subfolders[:] = sorted(d for d in subfolders if d != "__pycache__"
                                   and os.path.realpath(os.path.join(folder, d)) not in others)
            for file in names:
                if file.endswith(SUFFIXES):
                    path = os.path.join(folder, file)
                    inside = os.path.relpath(path, root).replace(os.sep, "/")
                    out.append((f"{name.replace('.', '/')}/{inside}", path))
    return sorted(out)


@functools.lru_cache(maxsize=1)
def source_sha256() -> str:
    """SHA-256 over every source file's name and contents (once a process)."""
    digest = hashlib.sha256()
    for name, path in source_files():
        with open(path, "rb") as f:
            data = f.read()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def simulator_identity() -> dict[str, str]:
    """The version and the source digest, as a sweep's folder records them."""
    from simpy_astra import __version__

    return {"version": __version__, "source_sha256": source_sha256()}
