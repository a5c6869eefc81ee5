"""The name a network of ours answers to in its errors and warnings, and how a subclass that
a researcher registers under a name of its own takes that name (a trunk derived from the
analytical backend said 'the congestion_unaware backend has no links')."""

from __future__ import annotations

from simpy_astra.plugins import is_ours


class RegisteredName:
    """A network class of ours: ``name`` is its backend's, and :meth:`run_as` is how the
    registry's builder gives a subclass the name the run uses."""

    name: str

    def run_as(self, name: str) -> None:
        """Answer to ``name``, the backend the run built this network as, where the name is still
        one a class of ours gave it (a subclass that names itself keeps its own)."""
        owner = next((c for c in type(self).__mro__ if "name" in vars(c)), None)
        if owner is not None and is_ours(owner):
            self.name = name
