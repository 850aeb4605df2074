# expect: `other` cannot be given without `mask`
# at: 11:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"X": "*fp32"}


@triton.jit
def kernel(X, BLOCK: tl.constexpr):
    x = tl.load(X, other=0.0)
