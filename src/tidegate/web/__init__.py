"""The web app (docs/web.md)."""
