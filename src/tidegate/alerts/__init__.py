"""Alerts: channels on views and preset alerts, the evaluator that fires them, the
outbox that delivers them, and the index-rate alert (docs/alerts.md)."""
