"""Put on PYTHONPATH by uvmrun when it sets PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync.

PyTorch's CUDA-graph trees (torch.compile in modes reduce-overhead and max-autotune) need the
caching allocator's private pools, which that backend does not have: they raise "cudaMallocAsync
does not yet support checkPoolLiveAllocations". Inductor's plain CUDA graphs run on it. So once
torch._inductor.config is imported, graph trees default to off; a program that sets
torch._inductor.config.triton.cudagraph_trees itself still gets what it sets, since it does so
after the import. Then the next sitecustomize on the path, if any, runs as it would have.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_CONFIG_MODULE = "torch._inductor.config"
_HERE = os.path.dirname(os.path.abspath(__file__))


def _backend_is_stream_ordered():
    # PyTorch reads the older name first; the value is a comma-separated list of key:value.
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", os.environ.get("PYTORCH_ALLOC_CONF", ""))
    return "backend:cudaMallocAsync" in conf.replace(" ", "")


def _graph_trees_off(module):
    triton = getattr(module, "triton", None)
    if triton is not None and getattr(triton, "cudagraph_trees", False):
        triton.cudagraph_trees = False


class _AfterConfigImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the real loader of torch._inductor.config."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _CONFIG_MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            _graph_trees_off(module)

        spec.loader.exec_module = exec_module
        return spec


def _run_next_sitecustomize():
    rest = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if _backend_is_stream_ordered():
    if _CONFIG_MODULE in sys.modules:
        _graph_trees_off(sys.modules[_CONFIG_MODULE])
    else:
        sys.meta_path.insert(0, _AfterConfigImport())
_run_next_sitecustomize()
