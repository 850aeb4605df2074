# expect: format()
# at: 11:21
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    tl.static_print(f"block {BLOCK:q}")
