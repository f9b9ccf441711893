"""The ToolBench search algorithms, no I/O: one agent step (agent.py), the tree (tree.py), the registered
search methods (methods.py: CoT@N in cot.py, DFSDT in dfs.py), each building its own answer file, and
structured output's re-asks (structured.py)."""
