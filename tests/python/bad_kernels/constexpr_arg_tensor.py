# expect: is declared tl.constexpr but was given a tensor
# at: 15:9
import ctriton as triton
import ctriton.language as tl

@triton.jit
def needs_constexpr(v: tl.constexpr):
    return v

SIGNATURE = {"n": "i32"}


@triton.jit
def kernel(n, BLOCK: tl.constexpr):
    x = needs_constexpr(n)
