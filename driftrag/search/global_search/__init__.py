"""Global search: map over the community reports of one level, reduce the best key points."""
