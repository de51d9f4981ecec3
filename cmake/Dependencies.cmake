# Third-party pieces. The preloaded library must need nothing at run time beyond
# glibc, libstdc++ and the driver, so spdlog and fmt are used header-only and end
# up compiled into it with hidden visibility.
find_package(Threads REQUIRED)
find_package(CUDAToolkit REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)

find_path(UVMP_SPDLOG_INCLUDE spdlog/spdlog.h REQUIRED)
find_path(UVMP_FMT_INCLUDE fmt/format.h REQUIRED)
add_library(uvmp_logging_deps INTERFACE)
target_include_directories(uvmp_logging_deps SYSTEM INTERFACE ${UVMP_SPDLOG_INCLUDE} ${UVMP_FMT_INCLUDE})
target_compile_definitions(uvmp_logging_deps INTERFACE SPDLOG_HEADER_ONLY SPDLOG_FMT_EXTERNAL FMT_HEADER_ONLY)
target_link_libraries(uvmp_logging_deps INTERFACE Threads::Threads)

# toml++ is used header-only for the same reason.
find_path(UVMP_TOMLPP_INCLUDE toml++/toml.h REQUIRED)
add_library(uvmp_toml INTERFACE)
target_include_directories(uvmp_toml SYSTEM INTERFACE ${UVMP_TOMLPP_INCLUDE})
target_compile_definitions(uvmp_toml INTERFACE TOML_HEADER_ONLY=1 TOML_EXCEPTIONS=1)

# uvmtrace reads zstd-compressed traces. Linked statically where the static library
# is installed, so that the tool runs on machines without libzstd; the preloaded
# library never links it.
find_path(UVMP_ZSTD_INCLUDE zstd.h REQUIRED)
find_library(UVMP_ZSTD_LIBRARY NAMES libzstd.a zstd REQUIRED)
add_library(uvmp_zstd INTERFACE)
target_include_directories(uvmp_zstd SYSTEM INTERFACE ${UVMP_ZSTD_INCLUDE})
target_link_libraries(uvmp_zstd INTERFACE ${UVMP_ZSTD_LIBRARY})

# Only the driver API's types and declarations are used; libcuda itself is opened at run time.
add_library(uvmp_cuda_headers INTERFACE)
target_include_directories(uvmp_cuda_headers SYSTEM INTERFACE ${CUDAToolkit_INCLUDE_DIRS})

if(UVMP_BUILD_TESTS)
  find_package(Catch2 REQUIRED)
endif()
