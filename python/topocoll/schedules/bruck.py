"""Placeholder: generators being written."""
