"""Safe live change: the configuration file watched and reloaded (controller), user plugins
re-imported when their source changes (modules), and the SLO guard that rolls a bad change back
(guard). The generations themselves are framework.generation's; the scheduler swaps them."""
