"""Wire-level parts of :mod:`praisonai.compute.testing.modal_fake` (see its docstring)."""
