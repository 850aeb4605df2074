# expect: nested comprehensions (more than one `for`) are not supported
# at: 11:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    x = [i + j for i in range(3) for j in range(2)]
