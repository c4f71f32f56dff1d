"""Every number ragexp reports is computed here: means and their intervals, judge noise, paired
tests, multiplicity, agreement and the ranking of a sweep's jobs. Views of these numbers live in
`ragexp.reporting` and `ragexp.tracking`; they compute nothing."""

CONFIDENCE = 0.95
"""The level of every interval ragexp reports."""
ALPHA = 0.05
"""The significance level of every test (after Holm's adjustment in a sweep)."""
