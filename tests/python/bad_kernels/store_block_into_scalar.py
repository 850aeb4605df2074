# expect: the value is a block
# at: 11:5
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"X": "*fp32"}


@triton.jit
def kernel(X, BLOCK: tl.constexpr):
    tl.store(X, tl.arange(0, 16))
