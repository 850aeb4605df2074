# expect: different signedness
# at: 11:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"X": "*u32", "Y": "*i32"}


@triton.jit
def kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X) // tl.load(Y)
