"""The one error secure serving raises at start-up."""


class ServingError(Exception):
    """The secure port cannot be set up as configured; the message names the flag."""
