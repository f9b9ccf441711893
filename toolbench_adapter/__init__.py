"""toolbench-adapter: everything that speaks StableToolBench, exactly."""

__version__ = "0.1.0"
