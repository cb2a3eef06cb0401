"""The document-structure graph: parsing files, building URIs, resolving links, writing, watching."""
