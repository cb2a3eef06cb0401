"""Optional text embeddings for tables, columns and business terms (table context's vector arm)."""
