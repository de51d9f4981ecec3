"""The uvmprefetch C API (include/uvmprefetch/uvmprefetch.h) from Python, for scripts
that run with and without the library preloaded."""
import ctypes


class LibraryCounters:
    """The library's counters when it is preloaded, else nothing."""

    class Stats(ctypes.Structure):
        _fields_ = [("struct_size", ctypes.c_uint32), ("active", ctypes.c_uint32)] + [
            (name, ctypes.c_uint64)
            for name in (
                "allocs_converted bytes_converted bytes_converted_live bytes_converted_peak "
                "frees_converted allocs_passed_through bytes_passed_through passthrough_vmm "
                "passthrough_host passthrough_capture passthrough_managed_failed passthrough_inactive "
                "guard_refusals launches_seen launches_with_access access_entries populate_calls "
                "bytes_populated bytes_prefetched bytes_evicted iterations budget_bytes "
                "guard_limit_bytes trace_records_written trace_records_dropped launches_unplanned move_calls "
                "move_call_ns bytes_demand_estimated launches_with_demand launch_calls_timed launch_call_ns "
                "launches_captured launches_fenced hooks_timed hook_ns pool_slabs_created pool_slabs_released "
                "pool_reserved_bytes pool_reserved_peak graph_launches graph_launches_unknown graph_steps_replayed "
                "launches_planned passthrough_app_managed host_allocs host_bytes_allocated host_blocks_live "
                "host_bytes_live host_slabs_created host_slab_bytes bytes_evicted_dead bytes_dead_resident "
                "bytes_held_peak remote_write_bytes_named remote_read_bytes_named pool_slab_release_ns"
            ).split()
        ]

    def __init__(self):
        process = ctypes.CDLL(None)
        try:
            self._get = process.uvmp_get_stats
            self._mark = process.uvmp_mark_iteration
        except AttributeError:
            self._get = None
            self._mark = None

    @property
    def present(self):
        return self._get is not None

    def read(self):
        if not self._get:
            return None
        s = self.Stats()
        s.struct_size = ctypes.sizeof(s)
        if self._get(ctypes.byref(s)) != 0:
            return None
        # The library sets struct_size to what it filled: an older one knows fewer fields, and
        # those past it are left out rather than read as zeros.
        return {name: getattr(s, name) for name, _ in s._fields_
                if getattr(self.Stats, name).offset + getattr(self.Stats, name).size <= s.struct_size}

    def mark_iteration(self):
        if self._mark:
            self._mark()


def iteration_marker():
    """uvmp_mark_iteration when the library is preloaded, otherwise a no-op."""
    counters = LibraryCounters()
    return counters.mark_iteration
