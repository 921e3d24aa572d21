"""Local web UI and static HTML reports."""
