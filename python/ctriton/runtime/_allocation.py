"""Triton's module name for the allocator (``triton.runtime._allocation``)."""
from .allocation import NullAllocator, get_allocator, set_allocator  # noqa: F401
