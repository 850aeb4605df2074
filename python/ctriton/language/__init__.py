"""ctriton.language: the names of triton.language (owned by the frontend)."""
