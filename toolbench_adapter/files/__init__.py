"""Files and folders: atomic writes, the files a folder reader may open, YAML and JSON with limits, the run folder's layout."""
