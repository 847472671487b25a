"""The training loop and its variants (single, async runner, bandit, multi-agent), the callbacks it tells of a
run's events (its own bookkeeping among them, ``stop.*`` and the user's), evaluation, videos, the summary of a
finished run, and the process-global generators a checkpoint captures."""
