"""The optional C kernel of the JSON-lines paths (``_kernel.c``) and its Python side."""
