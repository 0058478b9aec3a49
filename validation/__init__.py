"""Validation cases of swe against exact and reference solutions (see common.py)."""
