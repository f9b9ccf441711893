"""tba sweep: many runs from one spec, scheduled together against shared endpoints, judged, one matrix."""
