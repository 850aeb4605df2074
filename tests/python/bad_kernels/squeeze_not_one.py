# expect: tl.squeeze(): dim 1 of
# at: 12:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    x = tl.zeros((4, 8), tl.float32)
    y = tl.squeeze(x, 1)
