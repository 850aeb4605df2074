# expect: 'pointer' must be a pointer
# at: 11:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"n": "i32"}


@triton.jit
def kernel(n, BLOCK: tl.constexpr):
    x = tl.load(n)
