"""What is done to the data, one module or small package per stage (see the README, "How it is
built"): plain functions, no Prefect; only flows/ wires them together."""
