# expect: 'continue' statements are not supported
# at: 12:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    for i in range(10):
        continue
