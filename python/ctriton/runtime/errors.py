"""Runtime errors: a kernel that needs more of the device than it has
(``OutOfResources``), and ``InterpreterError`` for scripts that catch it
(ctriton has no interpreter mode, so nothing raises it)."""
from ..errors import TritonError


class OutOfResources(TritonError):
    """A compiled kernel needs more of a resource (shared memory, registers)
    than the device offers. ``required``, ``limit`` and ``name`` say which."""

    def __init__(self, required, limit, name):
        self.required = required
        self.limit = limit
        self.name = name
        self.message = (f"out of resource: {name}, Required: {required}, Hardware limit: {limit}")
        if name == "shared memory":
            self.message += ". Reducing block sizes or `num_stages` may help."
        super().__init__(self.message)

    def __reduce__(self):
        return (type(self), (self.required, self.limit, self.name))


class InterpreterError(TritonError):
    """Kept for scripts that catch it; ctriton never raises it."""
