"""The Python view of uvmp_stats (examples/uvmp_library.py) against the C header: the same
fields in the same order, so that scripts read the counters they name. No GPU needed."""
import ctypes
import pathlib
import re
import sys
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import uvmp_library  # noqa: E402


def header_fields():
    text = (ROOT / "include" / "uvmprefetch" / "uvmprefetch.h").read_text()
    body = text[text.index("typedef struct uvmp_stats"):text.index("} uvmp_stats;")]
    # Comments may name fields too: only declarations count.
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    return re.findall(r"\b(uint32_t|uint64_t)\s+(\w+);", body)


class StatsLayout(unittest.TestCase):
    def test_same_fields_in_order(self):
        python = [name for name, _ in uvmp_library.LibraryCounters.Stats._fields_]
        self.assertEqual(python, [name for _, name in header_fields()])

    def test_same_widths(self):
        widths = {"uint32_t": 4, "uint64_t": 8}
        for (name, ctype), (c_type, c_name) in zip(uvmp_library.LibraryCounters.Stats._fields_, header_fields()):
            self.assertEqual(name, c_name)
            self.assertEqual(ctypes.sizeof(ctype), widths[c_type], name)

    def test_fields_an_older_library_did_not_fill_are_left_out(self):
        stats = uvmp_library.LibraryCounters.Stats
        filled = stats.bytes_held_peak.offset + stats.bytes_held_peak.size

        @ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(stats))
        def older_get(out):
            out.contents.struct_size = filled
            out.contents.active = 1
            out.contents.bytes_held_peak = 7
            return 0

        counters = uvmp_library.LibraryCounters.__new__(uvmp_library.LibraryCounters)
        counters._get, counters._mark = older_get, None
        read = counters.read()
        self.assertEqual(read["bytes_held_peak"], 7)
        self.assertNotIn("remote_write_bytes_named", read)
        self.assertNotIn("remote_read_bytes_named", read)


if __name__ == "__main__":
    unittest.main()
