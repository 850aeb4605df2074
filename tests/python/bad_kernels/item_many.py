# expect: tl.item(): the block
# at: 12:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    x = tl.zeros((BLOCK,), tl.float32)
    y = x.item()
