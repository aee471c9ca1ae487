"""Built-in dataset specs (TOML), shipped as package data."""
