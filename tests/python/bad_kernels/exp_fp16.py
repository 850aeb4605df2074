# expect: tl.exp() expects fp32 or fp64, got f16
# at: 11:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"X": "*fp16"}


@triton.jit
def kernel(X, BLOCK: tl.constexpr):
    x = tl.exp(tl.load(X))
