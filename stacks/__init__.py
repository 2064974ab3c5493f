"""Stack configuration, composition and the offline render."""
