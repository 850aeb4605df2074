# expect: invalid block shape [3, 4]
# at: 11:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    x = tl.zeros((3, 4), dtype=tl.float32)
