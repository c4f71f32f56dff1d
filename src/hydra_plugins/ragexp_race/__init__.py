"""ragexp's racing sweeper as a Hydra plugin: ``hydra/sweeper=race`` (`ragexp.sweep.race`)."""
