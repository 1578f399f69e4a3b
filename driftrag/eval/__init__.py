"""The research evaluation harness: question sets, runs of the query methods, metrics, judge, reports."""
