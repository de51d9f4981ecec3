# A job of two GPUs on the fake driver (devices_test.cpp): two devices of different
# sizes, a budget of a quarter of each (16 MiB and 8 MiB), and what the library does
# on one device charged to that device alone. Each scenario runs with the library and
# without it, and must give the same results. Included from CMakeLists.txt.
add_executable(devices_test devices_test.cpp)
target_link_libraries(devices_test PRIVATE uvmp_intercept_scenario uvmp_fake_cuda)
target_compile_options(devices_test PRIVATE ${UVMP_WARNINGS})

set(UVMP_DEVICES_TEST $<TARGET_FILE:devices_test>)
set(UVMP_TWO_DEVICES FAKECUDA_DEVICES=2 FAKECUDA_DEVICE_MEMORY=64M,32M)
set(UVMP_DEVICES_LIBRARY ${UVMP_PRELOAD_ENV} UVMP_BUDGET=25% UVMP_RESERVE=0 UVMP_POOL_SLAB_SIZE=8M)
set(UVMP_DEVICES_PASSED "OUTPUT_MATCHES_1=all [0-9]+ checks passed")

# The fake's two devices themselves.
uvmp_integration_checked_test(integration.devices.driver
  CHECKS "${UVMP_DEVICES_PASSED}"
  COMMAND env ${UVMP_TWO_DEVICES} ${UVMP_DEVICES_TEST} driver)

# Memory passed through on device 1, and the application's own managed memory there, is
# charged to device 1 (cuMemGetInfo there), not device 0.
foreach(scenario passthrough managed)
  uvmp_integration_checked_test(integration.devices.${scenario}
    CHECKS "${UVMP_DEVICES_PASSED}"
    COMMAND env ${UVMP_TWO_DEVICES} ${UVMP_DEVICES_LIBRARY} ${UVMP_DEVICES_TEST} ${scenario})
  uvmp_integration_checked_test(integration.devices.${scenario}_without_library
    CHECKS "${UVMP_DEVICES_PASSED}"
    COMMAND env ${UVMP_TWO_DEVICES} ${UVMP_DEVICES_TEST} ${scenario})
endforeach()

# Kernels on both devices under each policy that moves data: each launch planned on its own
# device, its moves sent there behind its own fence (devices_test checks the fake's counts),
# and the stats file and summary give each device's budget and figures. The buffers read
# back as without the library.
set(UVMP_DEVICES_CHECKSUM "OUTPUT_MATCHES_2=checksum 23aab9bbf9479325")
set(UVMP_DEVICES_STATS ${CMAKE_CURRENT_BINARY_DIR}/devices-stats)
# Lists in a shell command line: words apart, not a list's semicolons.
string(REPLACE ";" " " UVMP_DEVICES_SHELL_ENV "${UVMP_TWO_DEVICES};${UVMP_DEVICES_LIBRARY}")
foreach(policy learned demand-lru)
  set(stats ${UVMP_DEVICES_STATS}/${policy}.json)
  uvmp_integration_checked_test(integration.devices.planning_${policy}
    CHECKS "${UVMP_DEVICES_PASSED}" "${UVMP_DEVICES_CHECKSUM}"
           "OUTPUT_MATCHES_3=\"device\": 0,[^}]*\"budget_bytes\": 16777216,[^}]*\"bytes_converted_peak\": 33554432"
           "OUTPUT_MATCHES_4=\"device\": 1,[^}]*\"budget_bytes\": 8388608,[^}]*\"bytes_converted_peak\": 16777216"
           "OUTPUT_MATCHES_5=device 0: budget 16.0 MiB, physical guard [0-9.]+ MiB. converted 4 \\(32.0 MiB"
           "OUTPUT_MATCHES_6=device 1: budget 8.0 MiB, physical guard [0-9.]+ MiB. converted 4 \\(16.0 MiB"
    COMMAND sh -c "mkdir -p ${UVMP_DEVICES_STATS} && rm -f ${stats} && env ${UVMP_DEVICES_SHELL_ENV} \
            UVMP_POLICY=${policy} UVMP_SUMMARY=1 UVMP_STATS_FILE=${stats} ${UVMP_DEVICES_TEST} planning && cat ${stats}")
endforeach()
uvmp_integration_checked_test(integration.devices.planning_without_library
  CHECKS "${UVMP_DEVICES_PASSED}" "${UVMP_DEVICES_CHECKSUM}"
  COMMAND env ${UVMP_TWO_DEVICES} ${UVMP_DEVICES_TEST} planning)
