"""Triton's module name for the allocator (``triton.runtime._allocation``)."""
from .allocation import (NullAllocator, _NULL_ALLOCATOR, _allocator, _profile_allocator,  # noqa: F401
                         get_allocator, has_profile_allocator, set_allocator, set_profile_allocator)
