"""Every view of the numbers in `ragexp.stats`: ``report.md`` (`report`), ``ragexp compare``
(`compare`), the sweep summary (`sweep`, `plot`), the lines a run prints (`terminal`), and the
phrases they share (`wording`). Views compute nothing."""
