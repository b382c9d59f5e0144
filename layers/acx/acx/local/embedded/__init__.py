"""The embedded local backend: SQLite for what DynamoDB holds, a directory for what S3 holds, key
files for what KMS signs and keys, a SQLite queue for SQS (docs/LOCAL.md)."""
