"""The command line, ``python -m planner``: one module per subcommand.

May import every other package; the only place besides ``pages/`` that prints.
"""
