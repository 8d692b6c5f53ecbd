"""Reads: one module per entity, and the readers that combine them."""
