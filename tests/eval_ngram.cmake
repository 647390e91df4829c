# The n-gram baseline against scikit-learn (tests/ref/ngram_sklearn.py, run with /usr/bin/python3;
# Debian's python3-sklearn, installed by scripts/deps.sh): skipped (exit 77) without it.
if(TEST test_eval_ngram_sklearn)
  set_tests_properties(test_eval_ngram_sklearn PROPERTIES SKIP_RETURN_CODE 77)
endif()
