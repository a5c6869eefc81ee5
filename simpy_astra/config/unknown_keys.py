"""Keys no reader uses: refused in our own formats (scenario, job, sweep) or warned of in
ASTRA-sim's, naming the nearest known key (a misspelt key would otherwise keep its default).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from simpy_astra.errors import InputError, non_ascii


def nearest_key(key: str, known: Iterable[str]) -> str | None:
    """The known key ``key`` most likely misspells (``bandwith`` -> ``bandwidth``,
    ``packet_size`` -> ``packet-size``), or None when none is close."""
    import difflib  # only when a key is unknown: the default run never needs it

    known = sorted(known)
    folded = {k.lower().replace("_", "-"): k for k in known}
    spelled = key.lower().replace("_", "-")
    if spelled in folded:
        return folded[spelled]
    close = difflib.get_close_matches(spelled, list(folded), n=1, cutoff=0.6)
    return folded[close[0]] if close else None


def refuse_unknown_keys(src: str, data: dict[Any, Any], known: Iterable[str], what: str,
                        home: Callable[[Any], str | None] = lambda key: None) -> None:
    """Our own formats (scenario, job, sweep) are strict: a key no reader uses is an error
    naming the nearest known key (a misspelt ``netwrok`` or ``axis`` would otherwise run on
    defaults), or ``home(key)``: where a key of another mapping belongs. A YAML merge key
    (``<<``) is refused by name: the reader does not expand it."""
    known = set(known)
    for key in data:
        if key in known:
            continue
        if key == "<<":
            raise InputError(f"{src}: field '<<' is a YAML merge key, which {what} files do not support; "
                             f"write the fields out (aliases such as *name work)")
        near = nearest_key(str(key), known)
        hint = home(key) or (f"did you mean '{near}'?" if near else f"known: {', '.join(sorted(known))}")
        raise InputError(f"{src}: field '{key}'{non_ascii(key)} is not a {what} field; {hint}")


def refuse_label_values(src: str, data: dict[Any, Any], what: str) -> None:
    """``name`` and ``description`` are text for the reader of the file: a list there
    (``name: [a, b]``, a sweep axis's form) ran once, its values never read."""
    for key in ("name", "description"):
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, str | int | float)):
            raise InputError(f"{src}: field '{key}' is the {what}'s label, one line of text (got a "
                             f"{type(value).__name__}); several values to run are a sweep's axes: over fields a "
                             f"run reads (sweep --help)")


def unknown_key_warnings(src: str, data: dict[Any, Any], known: Iterable[str], what: str) -> list[str]:
    """One warning per key of ``data`` no reader uses, naming the nearest known key: a misspelt
    key would otherwise silently keep its default."""
    known = set(known)
    out = []
    for key in data:
        if key in known:
            continue
        near = nearest_key(str(key), known)
        hint = f"; did you mean '{near}'?" if near else f"; known: {', '.join(sorted(known))}"
        out.append(f"{src}: field '{key}'{non_ascii(key)} is not a {what} field and is ignored{hint}")
    return out
