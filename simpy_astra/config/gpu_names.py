"""What a GPU's name tells of its machine: its generation (the key of NCCL's per-generation
constants) and whether its nodes have NVSwitch-3 (NVLink SHARP, NCCL's NVLS), unless a
scenario or preset says so itself."""

from __future__ import annotations

import re

from simpy_astra.errors import InputError, InvalidConfigurationError

#: GPUs whose boards put them on NVSwitch-3 (NVLink SHARP, NCCL's NVLS): Hopper's and later
#: (H20 and H800 are Hopper's export boards, B300 and GB300 Blackwell Ultra's)
NVLS_GPUS = ("H100", "H200", "H800", "H20", "GH200", "B100", "B200", "GB200", "B300", "GB300")


#: GPUs whose boards have no NVSwitch-3: their name turns NVLS off without a word
NO_NVLS_GPUS = ("A100", "A800", "A30", "A40", "A10", "V100", "P100", "L40", "L4", "T4")


#: the rule a sweep's point breaks where its nodes cannot run NCCL's NVLS
NVLS_RULE = "NVLS needs NVSwitch-3"


#: the switch of the nodes of GPUs without NVSwitch-3, by chip (before the others: "A10" is in "A100")
_OLDER_SWITCHES = (("A100", "a 2nd-generation NVSwitch"), ("A800", "a 2nd-generation NVSwitch"),
                   ("V100", "at most a 1st-generation NVSwitch"))


#: a PCIe card (H100 PCIe, H100 NVL: NVLink bridges between two or four cards at most) sits on
#: no NVSwitch, whatever its chip; NVL72 and NVL36 are racks of NVSwitches
_NO_SWITCH = re.compile(r"PCIE|NVL(?![\dI])")


#: GPU generations as NCCL indexes its constants (by compute capability: Ada counts as Ampere,
#: Turing and Pascal as Volta), each by the chips' names; "GB200" holds "B200", "GH200" "H200"
GENERATIONS = (("blackwell", ("B100", "B200", "B300")), ("hopper", ("H100", "H200", "H800", "H20")),
               ("ampere", ("A100", "A800", "A30", "A40", "A10", "L40", "L4")), ("volta", ("V100", "P100", "T4")))


def gpu_generation(gpu_name: str) -> str:
    """The GPU's generation by its name (a key of NCCL's per-generation constants), "" if not known."""
    name = gpu_name.upper()
    return next((gen for gen, chips in GENERATIONS if any(chip in name for chip in chips)), "")


def has_nvls(gpu_name: str) -> bool:
    """Whether a node of these GPUs has NVLink SHARP (NVLS), by the GPU's name."""
    name = gpu_name.upper()
    return not _NO_SWITCH.search(name) and any(chip in name for chip in NVLS_GPUS)


def no_multicast(gpu_name: str, preset: str) -> str | None:
    """Why nodes of ``gpu_name`` cannot run NCCL's NVLS whatever a key says (their switch, if
    any, has no multicast), or None where its name does not tell or they can."""
    name = gpu_name.upper()
    if _NO_SWITCH.search(name):
        switch = "no NVSwitch (a PCIe card)"
    elif has_nvls(gpu_name) or not any(chip in name for chip in NO_NVLS_GPUS):
        return None
    else:
        switch = next((said for chip, said in _OLDER_SWITCHES if chip in name), "no NVSwitch")
    return (f"preset {preset}'s {gpu_name} nodes have {switch}, without the multicast (NVLink SHARP) of "
            f"NVSwitch-3, Hopper's NVSwitch systems on, that NCCL's NVLS needs")


def nvls_of(value: dict, preset_node: dict, gpu_name: str, where: str, path: str) -> tuple[bool, str, str | None]:
    """(whether the nodes have NVLS, what said so, a warning or None). ``cluster.nvls``, else
    the preset's ``node.nvls``, else the GPU's name: a name known neither way (a copy of a preset
    for a newer GPU, a name edited) turned NVLS off in silence; now it says so and how to turn it on."""
    for given, source in ((value.get("nvls"), f"{where}.nvls"), (preset_node.get("nvls"), f"{path}: node.nvls")):
        if given is None:
            continue
        if not isinstance(given, bool):
            raise InputError(f"{source}: must be true or false (whether the nodes have NVSwitch-3, NCCL's NVLS; "
                             f"got {given!r})")
        why_not = no_multicast(gpu_name, str(value.get("preset"))) if given else None
        if why_not:  # a machine that is not: a sweep's point NCCL cannot run
            drop = "drop nvls" if source == f"{where}.nvls" else "set it false (or drop it)"
            raise InvalidConfigurationError(f"{source}: true, but {why_not}; use an H100 preset (preset: dgx-h100), "
                                            f"or {drop}", NVLS_RULE)
        return given, f"{source} is {str(given).lower()}", None
    if has_nvls(gpu_name):
        return True, f"the GPU {gpu_name} has it", None
    if _NO_SWITCH.search(gpu_name.upper()):
        return False, f"the GPU {gpu_name} is a PCIe card, on no NVSwitch", None
    said = f"the GPU {gpu_name} has none (NVLS GPUs: {', '.join(NVLS_GPUS)})"
    if any(name in gpu_name.upper() for name in NO_NVLS_GPUS):
        return False, said, None
    return False, said, (f"{where}: NVLS off: GPU name {gpu_name!r} is none of {', '.join(NVLS_GPUS)} and no nvls "
                         f"key says; set nvls: true (cluster or the preset's node) if its nodes have NVSwitch-3, "
                         f"false to say they do not")
