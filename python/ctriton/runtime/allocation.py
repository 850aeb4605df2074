"""``set_allocator``: the function a kernel would use to get global scratch
memory at launch (``alloc(size, alignment, stream) -> buffer``). ctriton's
kernels need no scratch yet: the allocator is stored and not called."""


class NullAllocator:
    def __call__(self, size, alignment, stream):
        raise RuntimeError("Kernel requires a runtime memory allocation, but no allocator was set. "
                           "Use ctriton.set_allocator to specify an allocator.")


_allocator = NullAllocator()


def set_allocator(allocator):
    """Sets the scratch-memory allocator (callable(size, alignment, stream))."""
    global _allocator
    _allocator = allocator if allocator is not None else NullAllocator()


def get_allocator():
    return _allocator
