# tests/import.cmake: `sentinel import` on real debate logs (docs/formats.md "Imported
# trajectories"), checked by an independent Python re-derivation. The vendored subset always
# runs; the full stored set runs when SENTINEL_COLLAB_ATTACK_DIR names it (set here when
# a folder shared/data/collab-attack lies next to the source tree) and says it skipped otherwise.
set(SN_IMPORT_ENV ${SN_TEST_ENV})
# (or one level further up, for a git worktree kept one folder deeper than the checkout)
if(DEFINED ENV{SENTINEL_COLLAB_ATTACK_DIR})
  list(APPEND SN_IMPORT_ENV "SENTINEL_COLLAB_ATTACK_DIR=$ENV{SENTINEL_COLLAB_ATTACK_DIR}")
else()
  foreach(_up .. ../..)
    get_filename_component(_sn_collab_full
                           "${CMAKE_SOURCE_DIR}/${_up}/shared/data/collab-attack" ABSOLUTE)
    if(EXISTS "${_sn_collab_full}/logs")
      list(APPEND SN_IMPORT_ENV "SENTINEL_COLLAB_ATTACK_DIR=${_sn_collab_full}")
      break()
    endif()
  endforeach()
endif()
add_test(NAME import_collab_vendored
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/import_collab.sh vendored)
add_test(NAME import_collab_full
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/import_collab.sh full)
set_tests_properties(import_collab_vendored import_collab_full PROPERTIES
                     ENVIRONMENT "${SN_IMPORT_ENV}" LABELS "noasan" TIMEOUT 900
                     WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
