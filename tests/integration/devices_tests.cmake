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
