"""Reusable test helpers (real processes, ports)."""
