# expect: negative constant
# at: 11:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"X": "*u32"}


@triton.jit
def kernel(X, BLOCK: tl.constexpr):
    x = tl.load(X) + -1
