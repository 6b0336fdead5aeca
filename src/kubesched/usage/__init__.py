"""Node usage for load-aware plugins: Prometheus queries, the background provider, and
estimates of pods placed since the last sample."""
