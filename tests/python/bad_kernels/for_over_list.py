# expect: for loops must iterate over range()
# at: 11:14
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    for i in [1, 2]:
        pass
