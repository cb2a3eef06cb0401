"""Every `lakegraph` command, one home: a module per concern, each importing what it runs when it
runs (the command line starts without the engines' clients). `worker/cli.py` keeps the group.
The read commands are made from the shapes' specs (`shapes`), with the worker-side options some
of them take (`themes --refresh`, `bridge --refresh`)."""
