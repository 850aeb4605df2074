"""``triton._C.libtriton.nvidia``: ``cublas.CublasLt``.

``CublasLt(workspace).matmul(a, b, c)`` writes ``c = a @ b.T`` and
``gemm(a, b, c, d, alpha, beta)`` writes ``d = alpha * a @ b.T + beta * c``,
with a ``[M, K]``, b ``[N, K]`` (passed transposed, as Triton's binding
takes it) and c/d ``[M, N]``, all 2-D and of one dtype (float16, bfloat16,
float32 computed in TF32, float8_e4m3fn; gemm's c is float16), with
Triton's checks and messages.

This is torch's cuBLAS, not a direct cuBLASLt binding: the products go
through ``torch.mm`` (float8: ``torch._scaled_mm`` with unit scales and
fast accumulation), which on a GPU run cuBLAS/cuBLASLt on torch's current
stream with torch's own workspace (the workspace given here is checked and
kept, not used) and algorithm choice. Tensors on the CPU work too (torch's
CPU matmul). The block-scaled products (``block_scaled_matmul_mxfp8``,
``_nvfp4``, cuBLASLt's Blackwell scaling modes) are not provided: they
raise NotImplementedError.
"""
import contextlib
import types

_DTYPES = ("torch.float8_e4m3fn", "torch.float16", "torch.float32", "torch.bfloat16")


def _check(a, b, c):
    """Triton's checkMatmulConstraints: one supported dtype, 2-D, a [M, K],
    b [N, K], c [M, N]. RuntimeError otherwise."""
    da, db, dc = str(a.dtype), str(b.dtype), str(c.dtype)
    if da != db or da != dc:
        raise RuntimeError("Data types do not match.")
    if da not in _DTYPES:
        raise RuntimeError("Unsupported data type.")
    if a.dim() != 2 or b.dim() != 2 or c.dim() != 2:
        raise RuntimeError("Only 2D matrices are supported.")
    (m, k), (n, kb), (mc, nc) = a.shape, b.shape, c.shape
    if k != kb:
        raise RuntimeError(f"Matrix dimensions do not match. A is [{m}, {k}], B is [{n}, {kb}]. "
                           "Expected A.shape[1] == B.shape[1]. Note that B needs to be transposed.")
    if m != mc:
        raise RuntimeError(f"Matrix dimensions do not match. A is [{m}, {k}], C is [{mc}, {nc}]. "
                           "Expected A.shape[0] == C.shape[0].")
    if n != nc:
        raise RuntimeError(f"Matrix dimensions do not match. B is [{n}, {kb}], C is [{mc}, {nc}]. "
                           "Expected B.shape[0] == C.shape[1].")


@contextlib.contextmanager
def _tf32(torch, on_gpu):
    """float32 products in TF32, as the binding's compute type has them."""
    if not on_gpu:
        yield
        return
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def _product(torch, a, b, out_dtype):
    """a @ b.T (fp32 accumulation) in out_dtype."""
    if a.dtype == torch.float8_e4m3fn:
        if a.is_cuda:
            one = torch.ones((), device=a.device, dtype=torch.float32)
            return torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=out_dtype,
                                    use_fast_accum=True)
        return torch.mm(a.float(), b.float().t()).to(out_dtype)
    with _tf32(torch, a.is_cuda):
        return torch.mm(a, b.t()).to(out_dtype)


class CublasLt:
    """Triton's cuBLASLt handle, by torch's cuBLAS (see the module's
    docstring): ``matmul(a, b, c)``, ``gemm(a, b, c, d, alpha, beta)``."""

    def __init__(self, workspace):
        try:
            self.workspace_size = int(workspace.numel()) * int(workspace.element_size())
            self.workspace_ptr = int(workspace.data_ptr())
        except AttributeError:
            raise TypeError("CublasLt(workspace): expected a tensor (data_ptr, numel, "
                            f"element_size), got {type(workspace).__name__}") from None
        self.workspace = workspace

    def matmul(self, a, b, c):
        """c = a @ b.T: a [M, K], b [N, K], c [M, N], one dtype."""
        import torch
        _check(a, b, c)
        c.copy_(_product(torch, a, b, c.dtype))

    def gemm(self, a, b, c, d, alpha, beta):
        """d = alpha * a @ b.T + beta * c: a [M, K], b [N, K], d [M, N] of
        one dtype; c float16, of d's shape."""
        import torch
        _check(a, b, d)
        if str(c.dtype) != "torch.float16":
            raise RuntimeError(f"C dtype must be float16, got {c.dtype}")
        if tuple(c.shape) != tuple(d.shape):
            raise RuntimeError("C and D shapes must match")
        alpha, beta = float(alpha), float(beta)
        acc = _product(torch, a, b, torch.float32)
        acc = alpha * acc + beta * c.float() if beta else alpha * acc
        d.copy_(acc.to(d.dtype))

    def block_scaled_matmul_mxfp8(self, a, b, output, scale_a, scale_b):
        raise NotImplementedError("ctriton's CublasLt has no block-scaled (MXFP8) matmul: it is "
                                  "torch's cuBLAS, not a cuBLASLt binding")

    def block_scaled_matmul_nvfp4(self, a, b, output, scale_a, scale_b):
        raise NotImplementedError("ctriton's CublasLt has no block-scaled (NVFP4) matmul: it is "
                                  "torch's cuBLAS, not a cuBLASLt binding")


cublas = types.ModuleType(__name__ + ".cublas", "cuBLAS (torch's): CublasLt.")
cublas.CublasLt = CublasLt
