"""Export v2: an account's stored lines by time range and filter, paged by cursor."""
