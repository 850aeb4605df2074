# expect: is defined only in the then branch
# at: 13:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"n": "i32"}


@triton.jit
def kernel(n, BLOCK: tl.constexpr):
    if n > 0:
        y = 1.0
    z = y + 1
