# expect: return different numbers of values
# at: 11:5
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"n": "i32"}


@triton.jit
def helper(n):
    if n > 0:
        return n + 1
    return  # None: falling off the end instead would give poison


@triton.jit
def kernel(n, BLOCK: tl.constexpr):
    x = helper(n)
