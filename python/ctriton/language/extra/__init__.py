"""ctriton.language.extra: device library functions (libdevice)."""
from . import libdevice  # noqa: F401
from . import cuda  # noqa: F401
