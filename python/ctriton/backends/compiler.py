"""GPUTarget: what a kernel is compiled for."""


class GPUTarget:
    """A compilation target: backend ("cuda" or "cpu"), arch (compute
    capability as an int, 90 for sm_90; 0 for the CPU) and warp size.
    Immutable, compared and hashed by value (Triton's frozen dataclass)."""
    __slots__ = ("backend", "arch", "warp_size")

    def __init__(self, backend, arch, warp_size):
        object.__setattr__(self, "backend", backend)
        object.__setattr__(self, "arch", arch)
        object.__setattr__(self, "warp_size", warp_size)

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field '{name}'")

    def __delattr__(self, name):
        raise AttributeError(f"cannot delete field '{name}'")

    def _fields(self):
        return (self.backend, self.arch, self.warp_size)

    def __eq__(self, other):
        return type(other) is GPUTarget and self._fields() == other._fields()

    def __hash__(self):
        return hash(self._fields())

    def __repr__(self):
        return (f"GPUTarget(backend={self.backend!r}, arch={self.arch!r}, "
                f"warp_size={self.warp_size!r})")

    def key(self):
        return f"{self.backend}:{self.arch}:{self.warp_size}"
