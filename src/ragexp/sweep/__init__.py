"""Sweeps: what ties a Hydra multirun's jobs together, and the summary that ends it.

`callback` is the Hydra callback (`hydra.callbacks` in ``conf/config.yaml``): at the start of a
multirun it opens the parent MLflow run (`parent`) and writes `link.SweepLink` into the sweep dir,
where every job (in this process or a launcher's worker) finds the swept keys and the parent run;
at the end `finish` reads what each job left on disk (`ragexp.results.jobs`), ranks and tests
them (`ragexp.stats.ranking`), writes the views (`ragexp.reporting.sweep`, `.plot`) and logs them
on the parent run.
"""
