# tests/sim.cmake: the paper recipes (recipes/netsafe.json, collaboration.json, aitm.json,
# eval-8agents.json) point at user-supplied datasets and OpenAI-compatible endpoints; this test
# keeps their keys valid by running each on the built-in synthetic dataset and sim backend.
add_test(NAME sim_paper_recipes
         COMMAND bash -c "set -e; for r in netsafe collaboration aitm eval-8agents; do \
           rm -rf sim_recipes_out; \
           \"$<TARGET_FILE:sentinel>\" simulate --recipe ${CMAKE_SOURCE_DIR}/recipes/$r.json \
             -o sim_recipes_out --progress none \
             --set 'simulate.defaults.dataset={\"kind\":\"synthetic\",\"n\":2}' \
             --set simulate.defaults.backend=sim; \
           test -s sim_recipes_out/trajectories-0of1.jsonl.gz; done")
set_tests_properties(sim_paper_recipes PROPERTIES ENVIRONMENT "${SN_TEST_ENV}" TIMEOUT 120
                     WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/test-tmp)
