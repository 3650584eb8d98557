"""Ingestion suspensions: an account stops (and restarts) all its ingestion at once."""
