"""Tests against a local fake of the GitHub REST API (see fake_github.py)."""
