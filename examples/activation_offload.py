"""Activation offloading overlapped with compute, as torchtune's and Megatron's do: what a PyTorch
user writes instead of a library that moves memory for them.

In the forward every large tensor saved for backward is copied to pinned host memory on a side
stream, after the kernels that made it, while the forward goes on; the GPU tensor is kept until
its copy is done, then dropped. In the backward each one is fetched back on the side stream ahead
of need: unpacking tensor k starts the copies of the ones the backward needs next (they were saved
before k) up to a window of bytes, and the compute stream waits only for tensor k's copy.
Parameters (and autocast's copies of them) and small tensors stay on the GPU. A restored tensor
has the strides of the saved one, so the backward runs the same kernels on the same values.
"""


import contextlib


@contextlib.contextmanager
def unfilled(torch):
    """Buffers a copy overwrites whole are not filled first: deterministic mode fills every new
    tensor (pinned host buffers of gigabytes a step included) unless told not to."""
    settings = getattr(torch.utils, "deterministic", None)
    if settings is None or not hasattr(settings, "fill_uninitialized_memory"):
        yield
        return
    before = settings.fill_uninitialized_memory
    settings.fill_uninitialized_memory = False
    try:
        yield
    finally:
        settings.fill_uninitialized_memory = before


def dense_strides(tensor):
    """Whether the tensor's elements fill its span without gaps or overlap (in some order of its
    dimensions): its storage can then be copied as one block, strides kept."""
    expected = 1
    for stride, size in sorted((s, n) for s, n in zip(tensor.stride(), tensor.size()) if n > 1):
        if stride != expected:
            return False
        expected *= size
    return True


def is_weight_copy(tensor):
    """autocast's cast of a parameter: kept on the GPU (autocast holds it for the whole forward)."""
    function = tensor.grad_fn
    return (function is not None and type(function).__name__.startswith("ToCopyBackward")
            and any(type(f).__name__ == "AccumulateGrad" for f, _ in function.next_functions if f is not None))


class ActivationOffload:
    """Called once a step: a context (saved_tensors_hooks) for the step's forward and backward."""

    def __init__(self, torch, parameters, min_bytes=1 << 20, window_bytes=1 << 30):
        self.torch = torch
        self.min_bytes = min_bytes
        self.window_bytes = window_bytes
        self.parameter_pointers = {p.data_ptr() for p in parameters}
        self.side = torch.cuda.Stream()
        self.hooks = None
        self.reset()

    def reset(self):
        self.entries = []
        self.copying = []  # entries whose copy to the host may still run, oldest first
        self.copying_bytes = 0
        self.held = {}  # (pointer, dtype, size, stride, version) of a GPU tensor still held -> entry index
        self.fetched_bytes = 0  # fetched back, not yet unpacked
        self.cursor = None  # the next entry to prefetch, counting down
        self.offloaded_bytes = 0

    def __call__(self):
        self.reset()
        return self

    def __enter__(self):
        self.hooks = self.torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)
        self.hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self.hooks.__exit__(*exc)
        # Copies fetched but never unpacked must end before their memory is reused.
        self.torch.cuda.current_stream().wait_stream(self.side)
        self.reset()
        return False

    def offloadable(self, tensor):
        return (tensor.is_cuda and tensor.numel() * tensor.element_size() >= self.min_bytes
                and tensor.data_ptr() not in self.parameter_pointers and not is_weight_copy(tensor)
                and dense_strides(tensor))

    @staticmethod
    def key(tensor):
        return tensor.data_ptr(), tensor.dtype, tuple(tensor.size()), tensor.stride(), tensor._version

    def pack(self, tensor):
        if not self.offloadable(tensor):
            return tensor
        # The same tensor saved twice (an input of two operations) is copied once; the key is
        # only trusted while the tensor is held, so that its address cannot have been reused.
        key = self.key(tensor)
        known = self.held.get(key)
        if known is not None:
            return known
        host, copied = self.copy_on_side(tensor, pin_memory=True)
        size = tensor.numel() * tensor.element_size()
        entry = {"gpu": tensor, "host": host, "copied": copied, "bytes": size, "fetched": None, "used": False,
                 "key": key}
        self.entries.append(entry)
        index = len(self.entries) - 1
        self.held[key] = index
        self.copying.append(entry)
        self.copying_bytes += size
        self.offloaded_bytes += size
        self.release_copied(wait=True)
        return index

    def release_copied(self, wait):
        """Drops the GPU tensors whose copies are done; with wait, blocks until the copies under
        way are within the window (the forward must not run ahead of them by more)."""
        while self.copying:
            oldest = self.copying[0]
            if not oldest["copied"].query():
                if not (wait and self.copying_bytes > self.window_bytes):
                    return
                oldest["copied"].synchronize()
            self.copying.pop(0)
            self.copying_bytes -= oldest["bytes"]
            oldest["gpu"] = None
            self.held.pop(oldest["key"], None)

    def copy_on_side(self, source, **placement):
        """A new tensor of the source's strides (placement: pin_memory=True or device="cuda")
        filled from it on the side stream, and the event that ends the copy. The copy starts
        after the compute stream's work so far: the kernels that made the source, and the last
        use of the memory the new tensor takes (it is allocated in the compute stream's order)."""
        torch = self.torch
        with unfilled(torch):
            target = torch.empty_strided(source.size(), source.stride(), dtype=source.dtype, **placement)
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            target.copy_(source, non_blocking=True)
        done = torch.cuda.Event()
        done.record(self.side)
        return target, done

    def fetch(self, index, needed=False):
        entry = self.entries[index]
        if entry["gpu"] is not None or entry["fetched"] is not None or (entry["used"] and not needed):
            return
        entry["fetched"] = self.copy_on_side(entry["host"], device="cuda")
        self.fetched_bytes += entry["bytes"]

    def unpack(self, handle):
        if not isinstance(handle, int):
            return handle
        self.release_copied(wait=False)
        entry = self.entries[handle]
        if entry["gpu"] is not None:  # its copy has not even finished: still on the GPU
            entry["used"] = True
            return entry["gpu"]
        self.fetch(handle, needed=True)
        # The backward needs the tensors saved before this one next.
        following = handle - 1 if self.cursor is None else min(self.cursor, handle - 1)
        while following >= 0 and self.fetched_bytes < self.window_bytes:
            self.fetch(following)
            following -= 1
        self.cursor = following
        gpu, fetched = entry["fetched"]
        self.torch.cuda.current_stream().wait_event(fetched)
        entry["fetched"] = None
        entry["used"] = True
        self.fetched_bytes -= entry["bytes"]
        return gpu
