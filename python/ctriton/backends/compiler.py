"""GPUTarget: what a kernel is compiled for."""
from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class GPUTarget:
    """A compilation target: backend ("cuda" or "cpu"), arch (compute
    capability as an int, 90 for sm_90; 0 for the CPU) and warp size."""
    backend: str
    arch: Union[int, str]
    warp_size: int

    def key(self):
        return f"{self.backend}:{self.arch}:{self.warp_size}"
