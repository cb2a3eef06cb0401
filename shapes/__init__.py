"""lakegraph's read side: the shapes agents navigate, their renderers and servers."""
