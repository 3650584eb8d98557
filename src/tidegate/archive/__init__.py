"""Archiving (``/v1/config/archiving``, the ``logdna_archive`` Terraform resource): each
account's stored lines written once a day as gzip NDJSON objects to its bucket
(docs/archiving.md)."""
