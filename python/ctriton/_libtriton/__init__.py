"""``triton._C.libtriton`` when ctriton stands in for triton (see
ctriton.compat): the names of Triton's C++ extension that programs use
directly and ctriton provides. Only ``nvidia.cublas.CublasLt`` (the cuBLAS
matmul the tutorials compare against) is here; the compiler's own
bindings (``ir``, ``passes``, ``llvm``, ...) have no counterpart, since
ctriton's compiler is not MLIR."""
from . import nvidia  # noqa: F401
