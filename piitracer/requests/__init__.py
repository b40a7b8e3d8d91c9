"""Erasure requests operated over time: the request store (values under per-request keys), the
lifecycle from queued to closed, batch windows with a cost budget, and close = crypto-shred."""
