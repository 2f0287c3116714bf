"""Truco match service: transport adapters, service layer and storage."""
