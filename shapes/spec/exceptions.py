"""A shape's refusal of bad input: one line, in the shape's own terms, never a stack trace. Each kind
carries the HTTP status the API answers it with (the OpenAPI document lists them per operation)."""

from worker.exceptions import LakegraphError


class ShapeError(LakegraphError):
    """Input the shape cannot answer: out of range, not parsable, refused."""

    status = 400


class NotFound(ShapeError):
    """What the call names is not there: an unknown URI, table, theme, value or column, a cursor
    no call of this shape gave."""

    status = 404


class Denied(ShapeError):
    """The caller's grant does not reach what the call asks for: a capability it lacks (raw
    Cypher, SQL), or a table outside it named in SQL. What a grant hides is never denied by name:
    it is not found, exactly as if it did not exist."""

    status = 403


class Conflict(ShapeError):
    """The call is well formed but meets the graph's state: a name that fits several, a cursor
    whose answer changed since it was given."""

    status = 409


class TooLarge(ShapeError):
    """A request body past what the API reads."""

    status = 413


BY_STATUS: dict[int, type[ShapeError]] = {kind.status: kind for kind in (ShapeError, NotFound, Denied, Conflict, TooLarge)}
