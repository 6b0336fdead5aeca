"""In-tree plugins: one module per plugin; plugins/registry.py registers them by name.

Nothing is imported here, so importing one plugin does not import them all."""
