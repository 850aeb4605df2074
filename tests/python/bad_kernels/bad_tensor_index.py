# expect: unsupported tensor index
# at: 12:11
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    x = tl.arange(0, 16)
    y = x[3]
