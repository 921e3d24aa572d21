"""Search spaces, strategies and ranking over kernel variants."""
