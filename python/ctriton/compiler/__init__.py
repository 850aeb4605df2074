from .compiler import ASTSource, IRSource, CompiledKernel, LazyDict, compile, CompileError  # noqa: F401
from ..backends.compiler import GPUTarget  # noqa: F401
from .errors import CompilationError  # noqa: F401
from ..runtime.driver import max_shared_mem  # noqa: F401
