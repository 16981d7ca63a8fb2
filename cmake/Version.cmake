# Writes the generated version header in the build tree (its template is in shim/base).
# Run at every build (the aml_version target), so that a build of a later
# commit says that commit; the header is rewritten only when the version
# changes, so an unchanged version rebuilds nothing.
#   -DFIXED=...   a version given (scripts/release.sh's, in its build root)
#   -DBASE=...    the project's version, where scripts/version.sh cannot run
#   -DSRC=... -DOUT=...
if(FIXED)
  set(AML_SHIM_VERSION "${FIXED}")
else()
  execute_process(COMMAND bash "${SRC}/scripts/version.sh"
                  OUTPUT_VARIABLE AML_SHIM_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rc ERROR_QUIET)
  if(NOT rc EQUAL 0 OR AML_SHIM_VERSION STREQUAL "")
    set(AML_SHIM_VERSION "${BASE}")
  endif()
endif()
configure_file("${SRC}/shim/base/version.h.in" "${OUT}" @ONLY)
