# expect: tl.load() got an unexpected keyword argument 'masks'
# at: 11:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {"X": "*fp32"}


@triton.jit
def kernel(X, BLOCK: tl.constexpr):
    x = tl.load(X, masks=None)
