# expect: cannot access global variable G
# at: 13:9
import ctriton as triton
import ctriton.language as tl

G = 3

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    x = G + 1
