"""ctriton.compiler: compile-time errors (the driver lives with the runtime)."""
from .errors import CompilationError  # noqa: F401
