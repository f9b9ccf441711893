"""Exact protocol strings from upstream StableToolBench / ToolBench.

Every literal a model was trained on, or an upstream tool compares against, lives in this package,
one module per upstream concern, each string tagged with the upstream file it comes from.
Nothing outside this package should spell such a string itself.
"""
