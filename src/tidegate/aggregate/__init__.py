"""GET /v1/aggregate: a histogram and the top hosts, apps and levels of the lines a
filter selects, for log views and boards (docs/aggregate.md)."""
