# tests/quickstart_reduced.sh, sourced by tests/run_pipeline.sh and tests/train_pretrain_run.sh:
# the --set arguments (array `small`) that reduce recipes/quickstart.json ($recipe) to a
# pipeline the suite runs in seconds (few items, few steps).
# The reduction also gives the training debates the paper's styles (the recipe's endpoint
# sim-styles without `styles: "full"`), every wrong message as rejected (build.rejected `all`,
# the build's default, not the recipe's `adversary`) and leaves the evaluation-only
# `style_matched` attack out of the evaluation: in the full-styles world wording does not give
# the roles away, and 12 steps on 24 items learn too little for run_pipeline.sh's detection check
# (measured with the recipe's own settings: AUROC 0.565 against random's 0.521; the whole
# recipe trains 3600 steps on 2400 items: docs/eval.md "Content, not wording"). One
# evaluation, at the last step, so that the best checkpoint the run exports is the final one
# (the notebooks compare the detector with the trainer's final figures).
eval_exps=$("${SENTINEL_PYTHON:-/usr/bin/python3}" -c 'import json, sys
print(json.dumps([e for e in json.load(open(sys.argv[1]))["eval"]["experiments"]
                  if e["scenario"] != "style_matched"]))' "$recipe")
small=(--set simulate.defaults.dataset.n=24
       --set 'simulate.endpoints.sim-styles={"kind": "sim", "competence": 0.8}'
       --set build.rejected=all
       --set train.max_steps=12 --set train.warmup_steps=4 --set train.eval_every=12
       --set train.save_every=6
       --set eval.dataset.n=8 --set eval.bootstrap=0 --set "eval.experiments=$eval_exps")
