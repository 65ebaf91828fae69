"""Markers on spec/model.py's fields for the package schema (components/provider_gen.py reads them)."""


class TakesOutput:
    """Marks a field a program may take from another resource (an existing network's id, a key, an image): an
    `Input` in the package schema, whose value the provider resolves before the spec is built
    (components/provider.py; every other key is plain: it decides what is built)."""
