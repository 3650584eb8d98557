"""Syslog ingestion: a TCP (and TLS) listener for RFC 5424 and 3164 lines carrying an
ingestion key in the platform's structured-data element (docs/syslog.md)."""
