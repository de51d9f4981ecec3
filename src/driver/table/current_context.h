// Makes a context current on the calling thread for one scope and puts back the
// one that was, for calls that must run in a given context (a slab's free, the
// synchronisation cuMemFree owes) from whichever thread happens to make them.
#pragma once

#include "driver/table/driver_table.h"

namespace uvmp::driver {

class ScopedContext {
public:
    ScopedContext(const DriverTable& table, CUcontext context) : table_(table) {
        if (!context || table.cuCtxGetCurrent(&previous_) != CUDA_SUCCESS || previous_ == context) return;
        switched_ = table.cuCtxSetCurrent(context) == CUDA_SUCCESS;
    }
    ~ScopedContext() {
        if (switched_) table_.cuCtxSetCurrent(previous_);
    }
    ScopedContext(const ScopedContext&) = delete;
    ScopedContext& operator=(const ScopedContext&) = delete;

private:
    const DriverTable& table_;
    CUcontext previous_ = nullptr;
    bool switched_ = false;
};

} // namespace uvmp::driver
