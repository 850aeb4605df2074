# expect: static_assert failed: too small
# at: 11:5
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    tl.static_assert(BLOCK > 64, 'too small')
