"""ragexp's built-in plugins, registered on the plugin manager exactly like third-party ones."""
