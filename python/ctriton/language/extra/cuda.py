"""tl.extra.cuda: CUDA-specific extras."""
from . import libdevice  # noqa: F401
