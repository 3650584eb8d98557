"""The index-rate alert: ``GET|PUT /v1/config/index-rate``."""
