"""tidegate: a self-hostable log and telemetry platform server."""
