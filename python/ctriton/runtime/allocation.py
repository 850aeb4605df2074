"""``set_allocator``: where a kernel's global scratch memory comes from.

A kernel that needs global scratch (one that makes tensor maps on the
device: ``tl.make_tensor_descriptor`` over values it computes, on sm_90)
says so in its metadata (``global_scratch_size`` bytes per program,
``global_scratch_align``). At each launch the launcher (in C) calls the
allocator of the current context once, as
``allocator(size_per_program * number_of_programs, alignment, stream)``,
and passes the returned buffer's ``data_ptr()`` to the kernel; program p
uses bytes ``[p * size_per_program, (p + 1) * size_per_program)``. The
buffer is released after the launch is queued (a stream-ordered allocator,
such as torch's caching allocator, keeps it valid for the kernel). Without
an allocator the launch raises the NullAllocator's RuntimeError before
launching. As in Triton, the allocator is a context variable: set in one
thread (or asyncio task), it is that context's.
"""
from contextvars import ContextVar


class NullAllocator:
    def __call__(self, size, alignment, stream):
        raise RuntimeError("Kernel requires a runtime memory allocation, but no allocator was set. "
                           "Use triton.set_allocator to specify an allocator.")


_NULL_ALLOCATOR = NullAllocator()

_allocator = ContextVar("_allocator", default=_NULL_ALLOCATOR)


def set_allocator(allocator):
    """Sets the global-scratch allocator (callable(size, alignment, stream) ->
    an object with data_ptr()) of the current context; None: no allocator."""
    _allocator.set(allocator if allocator is not None else _NULL_ALLOCATOR)


def get_allocator():
    """The current context's allocator (the NullAllocator when none is set)."""
    return _allocator.get()


class _AllocatorWrapper:
    """Triton's holder of the profile allocator (.get() / .set())."""

    def __init__(self, allocator):
        self._allocator = allocator

    def get(self):
        return self._allocator

    def set(self, allocator):
        self._allocator = allocator

    def __call__(self, size, alignment, stream):
        return self._allocator(size, alignment, stream)


# ctriton's kernels need no profile scratch: kept for programs that set one
_profile_allocator = _AllocatorWrapper(_NULL_ALLOCATOR)


def set_profile_allocator(allocator):
    _profile_allocator.set(allocator if allocator is not None else _NULL_ALLOCATOR)


def has_profile_allocator():
    return not isinstance(_profile_allocator.get(), NullAllocator)
