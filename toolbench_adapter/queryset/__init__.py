"""The query set: query files, each query's identity, the functions it offers, and fetching upstream's files."""
