"""Source component types: one module each."""
