"""The data plane's front door: ``POST /logs/ingest`` (the platform's ingestion protocol),
exclusion rules applied before storage, usage, and retention. See docs/ingest.md."""
