"""Object storage writers shared by archiving and the pipeline destinations
(docs/archiving.md): the S3 API (AWS S3, IBM COS, DigitalOcean Spaces, any
S3-compatible endpoint)."""
