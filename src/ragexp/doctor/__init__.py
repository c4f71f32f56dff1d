"""``ragexp doctor``'s checks: Python and ragexp, the plugins, llama.cpp's build against this CPU
with a short probe of the bundled model, each backend the config uses, the MLflow store and the
call cache; every problem with the command that fixes it."""
