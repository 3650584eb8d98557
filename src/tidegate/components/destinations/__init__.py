"""Destination component types: one module each."""
