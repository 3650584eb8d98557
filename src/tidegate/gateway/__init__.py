"""The gateway endpoint: events into the pipelines of a gateway route."""
