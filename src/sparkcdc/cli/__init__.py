"""The ``cdc`` command."""
