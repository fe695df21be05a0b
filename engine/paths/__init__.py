"""The ways a job can run: the row path (the reference) and the fast paths held to it."""
