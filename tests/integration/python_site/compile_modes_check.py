"""Prints whether torch.compile's modes ask for CUDA graphs, as a job sees them, and whether
its own sitecustomize ran."""
import os

import torch._inductor as inductor

every = inductor.list_mode_options()
print(f"reduce-overhead cudagraphs={inductor.list_mode_options('reduce-overhead').get('triton.cudagraphs')} "
      f"max-autotune cudagraphs={inductor.list_mode_options('max-autotune', None).get('triton.cudagraphs')} "
      f"max_autotune={every['max-autotune'].get('max_autotune')} "
      f"any mode with cudagraphs={any(o.get('triton.cudagraphs') for o in every.values())} "
      f"user_sitecustomize={os.environ.get('USER_SITECUSTOMIZE', 'missing')}")
