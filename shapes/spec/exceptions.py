"""A shape's refusal of bad input: one line, in the shape's own terms, never a stack trace."""

from worker.exceptions import LakegraphError


class ShapeError(LakegraphError):
    """Unknown URI, empty or oversized query, out-of-range parameter."""
