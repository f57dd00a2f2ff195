"""An example of a user's package: implementations checked by arctic_ref's plugin, and broken
variants (``byo.broken``) that the plugin must fail on a named check."""
