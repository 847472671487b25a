"""Building a run: the environment and the agent a resolved config names, and the checks that pair them."""
