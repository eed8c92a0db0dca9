"""GitHub I/O: the pull-request flow's facade over PyGithub (``client``), imported lazily."""
