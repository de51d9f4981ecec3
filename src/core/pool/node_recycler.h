// Nodes of one type kept for reuse, so that the pool's bookkeeping allocates
// nothing per call in the steady state. Addresses stay put (a deque), since
// the nodes link to one another.
#pragma once

#include <deque>
#include <utility>
#include <vector>

namespace uvmp::pool {

template <class T>
class NodeRecycler {
public:
    template <class... Args>
    T* make(Args&&... args) {
        if (spare_.empty()) return &store_.emplace_back(std::forward<Args>(args)...);
        T* node = spare_.back();
        spare_.pop_back();
        *node = T{std::forward<Args>(args)...};
        return node;
    }
    void recycle(T* node) { spare_.push_back(node); }

private:
    std::deque<T> store_;
    std::vector<T*> spare_;
};

} // namespace uvmp::pool
