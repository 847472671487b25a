"""The training loop and its variants (single, async runner, bandit, multi-agent), evaluation, videos and
the process-global generators a checkpoint captures."""
