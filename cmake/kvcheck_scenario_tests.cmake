# kvcheck_scenario_tests.cmake — kvcheck_add_scenario_tests: every scenario file under a folder
# (and each seed) as a ctest test running `kvcheck run`.
#
#   kvcheck_add_scenario_tests(DIR [LABELS label...] [BACKEND lib.so] [SEEDS n...] [GPU]
#                              [PREFIX name/] [OUT dir] [KVCHECK command] [ARGS arg...])
#
# One test "<PREFIX><path below DIR>[/seed<N>]" per file (and seed), passing when the scenario
# meets its expectation (kvcheck's exit status). BACKEND runs the ops on a plugin; ARGS are added
# to every command. GPU tests run `--require-gpu` and ask ctest for one GPU (RESOURCE_GROUPS
# "gpus:1"): with `ctest -j N --resource-spec-file spec.json` they spread over a host's GPUs, each
# seeing only its own (CUDA_VISIBLE_DEVICES from CTEST_RESOURCE_GROUP_0_GPUS). KVCHECK defaults to
# the imported kvcheck::kvcheck; OUT to <build>/kvcheck-runs.

set(_KVCHECK_GPU_WRAPPER "${CMAKE_CURRENT_LIST_DIR}/kvcheck_gpu_test.sh")

function(kvcheck_add_scenario_tests dir)
  cmake_parse_arguments(A "GPU" "BACKEND;PREFIX;OUT;KVCHECK" "LABELS;SEEDS;ARGS" ${ARGN})
  if(NOT A_KVCHECK)
    set(A_KVCHECK kvcheck::kvcheck)
  endif()
  if(NOT A_OUT)
    set(A_OUT "${CMAKE_BINARY_DIR}/kvcheck-runs")
  endif()
  get_filename_component(dir "${dir}" ABSOLUTE)
  file(GLOB_RECURSE files CONFIGURE_DEPENDS "${dir}/*.json")
  list(SORT files)
  set(seeds "${A_SEEDS}")
  if(NOT seeds)
    set(seeds "-")  # the scenario's own seed
  endif()
  foreach(f ${files})
    get_filename_component(name "${f}" NAME)
    if(name MATCHES "^\\." OR name MATCHES "\\.schema\\.json$" OR name MATCHES "(^|\\.)suite\\.json$")
      continue()
    endif()
    file(RELATIVE_PATH rel "${dir}" "${f}")
    foreach(seed ${seeds})
      set(test "${A_PREFIX}${rel}")
      set(args run "${f}" -q --out "${A_OUT}/${A_PREFIX}${rel}")
      if(NOT seed STREQUAL "-")
        set(test "${test}/seed${seed}")
        list(APPEND args --seeds ${seed})
        list(TRANSFORM args REPLACE "^(${A_OUT}/.*)$" "\\1/seed${seed}")
      endif()
      if(A_BACKEND)
        list(APPEND args --backend "${A_BACKEND}")
      endif()
      if(A_GPU)
        set(exe "${A_KVCHECK}")
        if(TARGET "${A_KVCHECK}")
          set(exe "$<TARGET_FILE:${A_KVCHECK}>")
        endif()
        add_test(NAME "${test}" COMMAND "${_KVCHECK_GPU_WRAPPER}" "${exe}" ${args} --require-gpu
                 ${A_ARGS})
        set_tests_properties("${test}" PROPERTIES RESOURCE_GROUPS "gpus:1")
      else()
        add_test(NAME "${test}" COMMAND ${A_KVCHECK} ${args} ${A_ARGS})
      endif()
      if(A_LABELS)
        set_tests_properties("${test}" PROPERTIES LABELS "${A_LABELS}")
      endif()
    endforeach()
  endforeach()
endfunction()
