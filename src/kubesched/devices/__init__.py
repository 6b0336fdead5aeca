"""Dynamic resource allocation (DRA): claims, slices, classes, the structured allocator, and the
CEL environment device selectors are evaluated in (cel.py)."""
