# expect: only the last dimension is supported
# at: 12:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    x = tl.zeros((4, 8), tl.float32)
    y = tl.sort(x, 0)
