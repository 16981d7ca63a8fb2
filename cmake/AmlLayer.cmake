# One library per folder, linked only downward.
#
#   aml_layer(NAME name DIR folder SOURCES <sources> DEPS <lower layers>
#             TESTS <test sources>)
#
# declares the library, the layers it may use (DEPS, and theirs in turn), and
# its unit tests, which link this layer alone (so a test cannot reach above
# it either). aml_check_layers() then adds a build step that fails when a
# file includes a header of a layer its own does not depend on.

set_property(GLOBAL PROPERTY AML_LAYER_NAMES "")

function(aml_layer)
  cmake_parse_arguments(L "" "NAME;DIR" "SOURCES;DEPS;TESTS" ${ARGN})
  set(dir ${CMAKE_SOURCE_DIR}/${L_DIR})
  list(TRANSFORM L_SOURCES PREPEND ${dir}/)
  if(L_SOURCES)
    add_library(${L_NAME} STATIC ${L_SOURCES})
    set(scope PUBLIC)
  else()
    add_library(${L_NAME} INTERFACE)
    set(scope INTERFACE)
  endif()
  target_include_directories(${L_NAME} ${scope} ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}/gen)
  if(L_SOURCES)
    target_compile_options(${L_NAME} PRIVATE ${AML_WARNINGS})
  endif()
  target_link_libraries(${L_NAME} ${scope} ${L_DEPS})
  set_property(GLOBAL APPEND PROPERTY AML_LAYER_NAMES ${L_NAME})
  set_property(GLOBAL PROPERTY AML_LAYER_DIR_${L_NAME} ${L_DIR})
  set_property(GLOBAL PROPERTY AML_LAYER_DEPS_${L_NAME} ${L_DEPS})
  if(L_TESTS AND AML_SHIM_TESTS)
    list(TRANSFORM L_TESTS PREPEND ${dir}/)
    aml_unit_tests(${L_NAME} ${L_TESTS})
  endif()
endfunction()

# The layers `name` may use: itself and every layer below it.
function(aml_layer_closure name out)
  set(seen ${name})
  set(todo ${name})
  while(todo)
    list(POP_FRONT todo cur)
    get_property(deps GLOBAL PROPERTY AML_LAYER_DEPS_${cur})
    foreach(d ${deps})
      get_property(is_layer GLOBAL PROPERTY AML_LAYER_DIR_${d} SET)
      if(is_layer AND NOT d IN_LIST seen)
        list(APPEND seen ${d})
        list(APPEND todo ${d})
      endif()
    endforeach()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# Writes the layer map and adds `check_layers`, which every target of the
# project depends on.
function(aml_check_layers)
  get_property(names GLOBAL PROPERTY AML_LAYER_NAMES)
  set(map "")
  set(files "")
  foreach(n ${names})
    get_property(dir GLOBAL PROPERTY AML_LAYER_DIR_${n})
    aml_layer_closure(${n} allowed)
    set(allowed_dirs "")
    foreach(a ${allowed})
      get_property(adir GLOBAL PROPERTY AML_LAYER_DIR_${a})
      list(APPEND allowed_dirs ${adir})
    endforeach()
    string(REPLACE ";" "," allowed_dirs "${allowed_dirs}")
    string(APPEND map "${dir}=${allowed_dirs}\n")
    file(GLOB layer_files CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*.h
         ${CMAKE_SOURCE_DIR}/${dir}/*.cc)
    list(APPEND files ${layer_files})
  endforeach()
  set(map_file ${CMAKE_BINARY_DIR}/layers.txt)
  file(WRITE ${map_file} "${map}")
  set(stamp ${CMAKE_BINARY_DIR}/layers.stamp)
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_SOURCE_DIR} -DMAP=${map_file}
            -P ${CMAKE_SOURCE_DIR}/cmake/CheckLayers.cmake
    COMMAND ${CMAKE_COMMAND} -E touch ${stamp}
    DEPENDS ${files} ${map_file} ${CMAKE_SOURCE_DIR}/cmake/CheckLayers.cmake
    COMMENT "Checking that each layer includes only the layers below it")
  add_custom_target(check_layers ALL DEPENDS ${stamp})
  foreach(n ${names})
    add_dependencies(${n} check_layers)
  endforeach()
endfunction()
