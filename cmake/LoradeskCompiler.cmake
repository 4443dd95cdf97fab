# Compiler launcher and warnings shared by every target.
find_program(LORADESK_CCACHE ccache)
if(LORADESK_CCACHE)
    set(CMAKE_C_COMPILER_LAUNCHER ${LORADESK_CCACHE})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${LORADESK_CCACHE})
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${LORADESK_CCACHE})
endif()

# Warnings for our own targets only (third-party headers come in as SYSTEM).
add_library(loradesk_warnings INTERFACE)
target_compile_options(loradesk_warnings INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
