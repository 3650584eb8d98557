"""Usage in the platform's shapes: v1 shares of lines, v2 bytes stored."""
