# expect: helper2() got an unexpected keyword argument 'w'
# at: 15:9
import ctriton as triton
import ctriton.language as tl

@triton.jit
def helper2(v):
    return v

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    x = helper2(1, w=2)
