"""Views (saved searches) and preset alerts: the v1 configuration API."""
