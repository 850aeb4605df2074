# expect: calling a non-jit Python function 'helper'
# at: 14:9
import ctriton as triton
import ctriton.language as tl

def helper(v):
    return v

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    x = helper(1)
