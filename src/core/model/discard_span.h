// Which bytes of a freed block of the managed pool a discard may drop: its whole
// chunks. Blocks of at least a chunk start on a chunk boundary of their slab
// (pool::PoolConfig), so these are the chunks no other block can share; the
// short tail, which the next block may share, is left as it is. The driver glue
// discards exactly this span and the residency model remembers exactly it.
#pragma once

#include <cstdint>

namespace uvmp {

struct AddressSpan {
    uint64_t begin = 0;
    uint64_t end = 0; // one past the last byte; begin == end: nothing
    uint64_t bytes() const { return end - begin; }
};

inline AddressSpan discard_span(uint64_t address, uint64_t size, uint64_t chunk_bytes) {
    const uint64_t whole = chunk_bytes ? size / chunk_bytes * chunk_bytes : 0;
    return {address, address + whole};
}

} // namespace uvmp
