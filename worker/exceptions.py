"""The one exception type a user sees: a single line saying what is wrong and what to do."""


class LakegraphError(Exception):
    """An expected failure (bad config, engine down, missing tool), shown without a traceback."""


class EngineUnavailable(LakegraphError):
    """An engine (Neo4j, Redis, a warehouse) is down or unreachable: worth retrying later."""


def first_line(err: BaseException, limit: int = 200) -> str:
    """An error's first line (its type's name if it has no message), cut to `limit` characters."""
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0][:limit]
