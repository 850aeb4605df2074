# expect: the range bound of a list comprehension
# at: 11:21
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"n": "i32"}


@triton.jit
def kernel(n, BLOCK: tl.constexpr):
    y = [i for i in range(n)]
