"""The engine below the CLI: sessions, path choice, workers, the optional C kernel."""
