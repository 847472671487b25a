"""What a run prints on the terminal: the progress line and its retraction."""
