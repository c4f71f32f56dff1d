"""MLflow: one run per job, with params, metrics, tags, the per-case table, artifacts, and one
trace per case carrying one assessment per metric (so MLflow's UI lists it as an evaluation run);
finding a finished run again (`lookup`).

``import mlflow`` costs about two seconds, so it happens lazily, in the tracker's own process,
only when tracking is on. Every write goes through MLflow's public client.
"""
