// How much the library logs (UVMP_LOG_LEVEL): the configuration reads it, the
// logger applies it, and neither needs the other's header for it.
#pragma once

namespace uvmp {

enum class LogLevel { Trace, Debug, Info, Warn, Error, Off };

} // namespace uvmp
