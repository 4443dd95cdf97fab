# Third-party dependencies, all from Debian packages (see scripts/setup.sh).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(SQLite3 REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
# Debian ships cpp-httplib as a compiled library whose pkg-config Cflags carry the defines it was
# built with; using the header alone with other defines would break the ABI.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)

set(LORADESK_QT_COMPONENTS Core)
if(LORADESK_BUILD_GUI)
    list(APPEND LORADESK_QT_COMPONENTS Gui Widgets Charts Network Svg)
endif()
if(LORADESK_BUILD_TESTS)
    list(APPEND LORADESK_QT_COMPONENTS Test)
endif()
if(LORADESK_BUILD_GUI OR LORADESK_BUILD_TESTS)
    find_package(Qt6 6.4 REQUIRED COMPONENTS ${LORADESK_QT_COMPONENTS})
endif()
