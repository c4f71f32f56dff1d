"""`ragexp generate`: a golden set drawn from a team's own documents, filtered and sized."""
