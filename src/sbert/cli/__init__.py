"""The `sbert` command line: one file per subcommand, dispatched from main.py."""
