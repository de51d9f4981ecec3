# Stands in for PyTorch in the sitecustomize test: only what the test imports.
