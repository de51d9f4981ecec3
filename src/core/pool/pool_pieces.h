// The nodes that the managed pool (core/pool/pool_book.h) links together:
// slabs, and the pieces that cover each slab in address order. A piece is a
// live block, or free memory ready for every stream, or free memory pending on
// the fence of the stream that freed it (core/pool/pending_frees.h).
#pragma once

#include "core/pool/pool_book.h"

#include <cstdint>
#include <vector>

namespace uvmp::pool {

inline constexpr uint64_t kNever = ~uint64_t{0};

inline uint64_t saturating_add(uint64_t a, uint64_t b) { return a > kNever - b ? kNever : a + b; }

struct Slab;
struct HeldFence;
class FreeIndex;

// The live bytes and blocks of one tag (the CUDA memory pool asked).
struct TagUsage {
    uint64_t used = 0, high = 0, blocks = 0;
};

enum class PieceKind : uint8_t { Live, Ready, Pending };

// The pieces of a slab form a list in address order that covers it; no two
// adjacent free pieces could be merged (core/pool/free_ranges.h).
struct Piece {
    uint64_t addr = 0, size = 0;
    Slab* slab = nullptr;
    Piece* prev = nullptr; // address order within the slab
    Piece* next = nullptr;
    PieceKind kind = PieceKind::Ready;
    FreeIndex* index = nullptr; // free: the ready index, or its stream's pending index
    Piece* bin_prev = nullptr;  // the index's size bin
    Piece* bin_next = nullptr;
    uint32_t bin = 0;
    HeldFence* fence = nullptr;   // pending
    StreamKey stream = 0;         // pending: the fence's stream
    Piece* fence_prev = nullptr;  // the pieces waiting on the fence
    Piece* fence_next = nullptr;
    TagUsage* tag = nullptr;      // live
};

struct Slab {
    uint32_t id = 0;
    uint64_t base = 0, bytes = 0;
    uint32_t live = 0;        // live blocks
    uint32_t pending = 0;     // free pieces pending on a fence
    uint64_t empty_since = 0; // when its last live block was freed
    bool wholly_free = false; // no live block and every free piece ready: one ready piece
    bool arena = false;       // PoolBook::make_arena's: placed in by allocate_at only
    Piece* first = nullptr;
    // The piece holding each chunk's first byte, for find().
    std::vector<Piece*> chunk_piece;
    // Chunks some block has covered: a managed slab holds memory only where its
    // pages were populated, and a block's pages stay when it is freed.
    std::vector<bool> backed;
    uint64_t backed_bytes = 0;
};

} // namespace uvmp::pool
