"""The workspace: YAML files loaded into strict models, with file:line errors and cross-checks."""
