"""Out-of-tree plugins that kpysched's e2e tests enable by name in a config file."""
