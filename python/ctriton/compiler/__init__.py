from .compiler import ASTSource, IRSource, CompiledKernel, compile, CompileError  # noqa: F401
from ..backends.compiler import GPUTarget  # noqa: F401
from .errors import CompilationError  # noqa: F401
