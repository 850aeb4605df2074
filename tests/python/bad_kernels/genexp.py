# expect: only list comprehensions are supported
# at: 11:14
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    x = tuple(i for i in range(3))
