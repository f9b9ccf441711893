"""One module per ``tba`` sub-command. Each defines ``register(subparsers)``; the CLI finds them itself,
so adding a command never means editing cli.py."""
