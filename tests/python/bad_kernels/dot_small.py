# expect: K must be at least 16 for f16 operands
# at: 12:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    a = tl.zeros((8, 8), dtype=tl.float16)
    c = tl.dot(a, a)
