# expect: range() step must not be zero
# at: 11:14
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"n": "i32"}


@triton.jit
def kernel(n, BLOCK: tl.constexpr):
    for i in range(0, n, 0):
        pass
