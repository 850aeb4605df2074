# expect: `boundary_check` argument is not supported for loading a tensor of pointers
# at: 11:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"X": "*fp32"}


@triton.jit
def kernel(X, BLOCK: tl.constexpr):
    x = tl.load(X, boundary_check=(0,))
