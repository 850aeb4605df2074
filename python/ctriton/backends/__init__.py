"""Backend descriptions (targets)."""
