"""The demo: a simulated automotive repair lakehouse, generated deterministically from a seed."""
