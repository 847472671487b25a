"""A finished run played back: evaluated, watched, recorded or exported; nothing is resolved from its directory."""
