"""Zoo: a readiness matrix over whole model families."""
