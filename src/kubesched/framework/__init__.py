"""Extension points, statuses, the plugin registry and the runtime that calls plugins."""
