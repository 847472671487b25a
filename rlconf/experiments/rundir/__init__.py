"""A run directory's whole life: creating and locking it, the files it holds and how they are read back
(bounded, schema-checked), the checkpoint format, provenance, resume, rerun, warm start and sweep directories.

Nothing here imports torch at import time except ``checkpoint``: ``rlconf status`` reads run directories."""
