# expect: cannot reshape
# at: 11:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    x = tl.reshape(tl.arange(0, 16), (4, 8))
