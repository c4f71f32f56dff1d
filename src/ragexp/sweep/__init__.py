"""Sweeps: what ties a Hydra multirun's jobs together, and the summary that ends it.

`callback` is the Hydra callback (`hydra.callbacks` in ``conf/config.yaml``): at the start of a
multirun it opens the parent MLflow run and writes `link.SweepLink` into the sweep dir, where
every job (in this process or a launcher's worker) finds the swept keys and the parent run; at
the end it reads what each job left on disk (`jobs`), compares them (`summary`: ranking, paired
tests, judge noise and agreement) and writes the summary (`render`, `plot`), also to the parent
run.
"""
