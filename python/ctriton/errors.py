"""The root of the exceptions ctriton raises for kernel problems."""


class TritonError(Exception):
    """Base class of compile- and launch-time kernel errors (Triton's
    ``triton.TritonError``)."""
