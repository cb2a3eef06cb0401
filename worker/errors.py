"""The one exception type a user sees: a single line saying what is wrong and what to do."""


class LakegraphError(Exception):
    """An expected failure (bad config, engine down, missing tool), shown without a traceback."""


class EngineUnavailable(LakegraphError):
    """An engine (Neo4j, Redis, a warehouse) is down or unreachable: worth retrying later."""
