# aml_unit_tests(layer <test sources>): one GoogleTest binary per layer
# (<layer>_tests), linked to that layer alone. Tests that run the built
# aml-shim or the stand-in CUDA/NCCL libraries get their paths as macros.
if(AML_SHIM_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
  find_path(AML_CUDA_INCLUDE nccl.h PATHS /usr/local/cuda/include NO_DEFAULT_PATH)
  find_path(AML_PMIX_INCLUDE pmix_common.h
            PATHS /usr/lib/x86_64-linux-gnu/pmix2/include /usr/include/pmix /usr/include)
endif()

function(aml_unit_tests layer)
  set(exe ${layer}_tests)
  add_executable(${exe} ${ARGN})
  target_compile_options(${exe} PRIVATE ${AML_WARNINGS} -Wno-conversion)
  target_compile_definitions(${exe} PRIVATE
    AML_FIXTURES_DIR="${CMAKE_SOURCE_DIR}/tests/fixtures"
    AML_FAKE_CUDART="$<TARGET_FILE:fake_cudart>" AML_FAKE_NCCL="$<TARGET_FILE:fake_nccl>"
    AML_SHIM_BINARY="$<TARGET_FILE:aml-shim>")
  target_link_libraries(${exe} PRIVATE ${layer} GTest::gtest GTest::gtest_main)
  add_dependencies(${exe} fake_cudart fake_nccl aml-shim)
  # The dlopen'd CUDA/NCCL ABI is checked against the real headers where the
  # toolkit is installed (never needed to build aml-shim itself).
  if(AML_CUDA_INCLUDE AND EXISTS ${AML_CUDA_INCLUDE}/cuda_runtime_api.h)
    target_include_directories(${exe} SYSTEM PRIVATE ${AML_CUDA_INCLUDE})
    target_compile_definitions(${exe} PRIVATE AML_CUDA_INCLUDE=1)
  endif()
  # Likewise PMIx's (libpmix-dev).
  if(AML_PMIX_INCLUDE)
    target_include_directories(${exe} SYSTEM PRIVATE ${AML_PMIX_INCLUDE})
    target_compile_definitions(${exe} PRIVATE AML_PMIX_INCLUDE=1)
  endif()
  # (ctest -L unit; and in scripts/test.sh --quick's tier.)
  gtest_discover_tests(${exe} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit)
endfunction()
