# expect: the condition of an `if` must be a scalar
# at: 11:8
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    if tl.arange(0, 16) > 3:
        pass
