"""Human labels, the ways in: the draw of answers to label (`draw`), the sheet for a spreadsheet
(`sheet`), the terminal labeller (`terminal`); MLflow's UI is the third (`ragexp.tracking
.assessments`). The format and its reader are in `ragexp.results.labels`; what labels do to a run
is in `ragexp.run.labels`. docs/labels.md explains them for users."""
