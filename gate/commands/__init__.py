"""One module per CLI command, each exposing ``run(args) -> int``."""
