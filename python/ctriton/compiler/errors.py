"""CompilationError: what the frontend raises for a kernel it cannot compile.

The message starts with ``file:line:col: error: what is wrong``, followed by
the offending source line and a caret under the column. ``error_message`` is
the bare reason; ``__cause__`` is an exception holding it, as in Triton
(whose CompilationError is raised from the error that caused it).
"""
from ..errors import TritonError


class CompilationError(TritonError):
    def __init__(self, message, filename=None, lineno=None, col=None):
        self.error_message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        text = message
        if filename is not None and lineno:
            text = f"{filename}:{lineno}:{col}: error: {message}"
            import linecache
            src = linecache.getline(filename, lineno).rstrip("\n")
            if src:
                caret = " " * max((col or 1) - 1, 0) + "^"
                text += "\n" + src + "\n" + caret
        self.message = text
        super().__init__(text)
        self.__cause__ = CompilationErrorCause(message)

    def __reduce__(self):
        return (type(self), (self.error_message, self.filename, self.lineno, self.col))


class CompilationErrorCause(TritonError):
    """The reason of a CompilationError, without its location."""
