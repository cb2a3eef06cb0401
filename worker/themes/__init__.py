"""Live themes: communities of documents in the link graph, with stable ids and a change log."""
