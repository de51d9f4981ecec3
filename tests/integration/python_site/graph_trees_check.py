"""Prints what a job sees of Inductor's graph-tree setting and of its own sitecustomize."""
import os

import torch._inductor.config as config

print(f"cudagraph_trees={config.triton.cudagraph_trees} "
      f"user_sitecustomize={os.environ.get('USER_SITECUSTOMIZE', 'missing')}")
