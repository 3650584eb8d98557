"""Processor component types: one module each."""
