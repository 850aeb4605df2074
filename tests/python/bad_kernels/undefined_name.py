# expect: name 'undefined_thing' is not defined
# at: 11:9
import ctriton as triton
import ctriton.language as tl

SIGNATURE = {}


@triton.jit
def kernel(BLOCK: tl.constexpr):
    x = undefined_thing + 1
