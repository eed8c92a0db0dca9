"""I/O with other systems (git, and later GitHub and MLflow), kept out of the pure core."""
