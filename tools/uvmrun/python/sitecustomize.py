"""Put on PYTHONPATH by uvmrun when it sets PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync.

torch.compile's CUDA graphs (modes reduce-overhead and max-autotune) do not run on that backend
(PyTorch 2.11): graph trees raise "cudaMallocAsync does not yet support
checkPoolLiveAllocations", and with trees off a training step aborts with "CUDA driver error:
invalid argument" when a captured allocation is freed outside its graph, natively as under the
library. So once torch._inductor is imported, its modes ask for no CUDA graphs: the same
kernels run, launched one by one, with the same results. A program that sets
torch._inductor.config.triton.cudagraphs itself, or passes it in torch.compile's options,
still gets what it asks for. Then the next sitecustomize on the path, if any, runs as it would
have.
"""

import functools
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_INDUCTOR = "torch._inductor"
_HERE = os.path.dirname(os.path.abspath(__file__))


def _backend_is_stream_ordered():
    # PyTorch reads the older name first; the value is a comma-separated list of key:value.
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", os.environ.get("PYTORCH_ALLOC_CONF", ""))
    return "backend:cudaMallocAsync" in conf.replace(" ", "")


def _without_cuda_graphs(options):
    if isinstance(options, dict) and options.get("triton.cudagraphs"):
        return {**options, "triton.cudagraphs": False}
    return options


def _modes_without_cuda_graphs(inductor):
    """torch.compile(mode=...) takes its options from torch._inductor.list_mode_options,
    looked up as it compiles: its answer for one mode, or for all, loses the CUDA graphs."""
    modes = getattr(inductor, "list_mode_options", None)
    if modes is None or getattr(modes, "_uvmprefetch", False):
        return

    @functools.wraps(modes)
    def list_mode_options(mode=None, *args, **kwargs):
        options = modes(mode, *args, **kwargs)
        if mode:
            return _without_cuda_graphs(options)
        return {name: _without_cuda_graphs(patch) for name, patch in options.items()}

    list_mode_options._uvmprefetch = True
    inductor.list_mode_options = list_mode_options


class _AfterInductorImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the real loader of torch._inductor."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _INDUCTOR:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            _modes_without_cuda_graphs(module)

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
    if _INDUCTOR in sys.modules:
        _modes_without_cuda_graphs(sys.modules[_INDUCTOR])
    else:
        sys.meta_path.insert(0, _AfterInductorImport())
_run_next_sitecustomize()
