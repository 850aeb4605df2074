# expect: assignment to a subscript
# at: 12:5
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    x = tl.arange(0, 16)
    x[0] = 1
