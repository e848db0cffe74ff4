"""quco.examples: the bundled kernel files, package data that an installed wheel carries.

kernels/*.json are QuCo Table III's kernels at the R9 Nano's sizes; kernels/<gpu>/ holds
the same kernels at another GPU's sizes (mi100, radeon-530). `quco-emu examples` prints
their paths. workloads/*.json are whole models layer by layer and workloads/dvfs/ the MI100
frequency traces (docs/workloads.md). hardware/ holds measurements of real GPUs in the
format `quco.perfmodel.hardware` reads (hardware/README.md: how they were taken).
"""
from importlib.resources import files
from pathlib import Path

KERNELS = Path(files(__name__) / "kernels")
WORKLOADS = Path(files(__name__) / "workloads")
HARDWARE = Path(files(__name__) / "hardware")


def kernel_files() -> dict[str, Path]:
    """Every bundled kernel by name: `matrix-matrix`, `mi100/matrix-matrix`, ..."""
    return {p.relative_to(KERNELS).with_suffix("").as_posix(): p for p in sorted(KERNELS.rglob("*.json"))}


def workload_files() -> dict[str, Path]:
    """Every bundled workload by name: `workloads/whisper-tiny`, ... (not the DVFS traces)."""
    return {f"workloads/{p.stem}": p for p in sorted(WORKLOADS.glob("*.json"))}
