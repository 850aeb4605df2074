# expect: tl.range() got an unexpected keyword argument 'stages'
# at: 11:29
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"n": "i32"}


@triton.jit
def kernel(n, BLOCK: tl.constexpr):
    for i in tl.range(0, n, stages=2):
        pass
