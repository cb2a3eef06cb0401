"""lakegraph's read side: the shapes agents navigate, their renderers and servers."""

from worker.graph import driver_import

driver_import.install()
