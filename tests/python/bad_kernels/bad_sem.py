# expect: sem must be
# at: 11:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"X": "*fp32"}


@triton.jit
def kernel(X, BLOCK: tl.constexpr):
    x = tl.atomic_add(X, 1.0, sem='strong')
