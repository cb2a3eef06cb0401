"""What the write side and the read side both stand on that is not the graph: identifier tokens as
documents and the bridge see them, the warehouse file opened read-only, the SQL parser's failures,
and the Google clients (BigQuery, Pub/Sub, Storage) made one way for both."""
