"""One run (a Hydra job): `job` is its three phases (prepare, execute, conclude); `pipeline`
runs the cases and `case` one case; `provenance` records where each metric came from; `gate`
and `failure` decide how the run ends; `signals` handles Ctrl-C and warnings; `compose` gives the
validated config of a job without running it."""
