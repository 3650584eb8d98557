"""The index-rate alert: its API (``GET|PUT /v1/config/index-rate``: endpoints, schemas,
service) and its evaluation in the alert rounds (evaluator)."""
