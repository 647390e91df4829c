#!/usr/bin/python3
"""tests/hf_trainer_state.py: trainer_state.json against transformers' TrainerState.

  check CKPT_DIR  trainer_state.json holds exactly TrainerState's fields and loads the way
                  TrainerState.load_from_json does (cls(**json): an unknown key is a TypeError,
                  a missing one takes the default); sentinel_state.json lists its SHA-256.
  to-v1 CKPT_DIR  rewrites a checkpoint into the layout written before
                  sentinel.trainer_state/2 (our state in trainer_state.json, no HF file), the
                  fixture for the resume of old runs (docs/formats.md, "Checkpoint").

The field list is written here from transformers' src/transformers/trainer_callback.py
(TrainerState, as of the releases that added best_global_step, v4.52 on; checked against the
repository's history: 55093b7 has every field below but best_global_step). transformers is not
installed; only the field list matters, since load_from_json passes the JSON to the dataclass.
"""
import dataclasses
import hashlib
import json
import os
import sys
from typing import Optional

HF_FIELDS = [
    "epoch", "global_step", "max_steps", "logging_steps", "eval_steps", "save_steps",
    "train_batch_size", "num_train_epochs", "num_input_tokens_seen", "total_flos",
    "log_history", "best_metric", "best_global_step", "best_model_checkpoint",
    "is_local_process_zero", "is_world_process_zero", "is_hyper_param_search", "trial_name",
    "trial_params", "stateful_callbacks",
]


@dataclasses.dataclass
class TrainerState:  # the shape of transformers' dataclass (fields and defaults only)
    epoch: Optional[float] = None
    global_step: int = 0
    max_steps: int = 0
    logging_steps: int = 500
    eval_steps: int = 500
    save_steps: int = 500
    train_batch_size: Optional[int] = None
    num_train_epochs: int = 0
    num_input_tokens_seen: int = 0
    total_flos: float = 0
    log_history: list = None
    best_metric: Optional[float] = None
    best_global_step: Optional[int] = None
    best_model_checkpoint: Optional[str] = None
    is_local_process_zero: bool = True
    is_world_process_zero: bool = True
    is_hyper_param_search: bool = False
    trial_name: Optional[str] = None
    trial_params: dict = None
    stateful_callbacks: dict = None


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check(ck):
    assert [f.name for f in dataclasses.fields(TrainerState)] == HF_FIELDS
    path = os.path.join(ck, "trainer_state.json")
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    assert sorted(d) == sorted(HF_FIELDS), (sorted(set(d) ^ set(HF_FIELDS)))
    st = TrainerState(**d)  # what load_from_json does
    with open(os.path.join(ck, "sentinel_state.json"), encoding="utf-8") as f:
        ours = json.load(f)
    assert ours["schema"] == "sentinel.trainer_state/2", ours["schema"]
    assert ours["files"]["trainer_state.json"] == sha256(path)
    step = ours["global_step"]
    assert st.global_step == step and isinstance(st.global_step, int)
    assert st.max_steps == ours["total_steps"] and st.max_steps >= step
    assert abs(st.epoch - ours["epoch"]) < 1e-12
    assert st.num_input_tokens_seen == ours["num_tokens"]
    for k in ("logging_steps", "eval_steps", "save_steps", "train_batch_size",
              "num_train_epochs"):
        assert isinstance(getattr(st, k), int) and getattr(st, k) > 0, k
    assert isinstance(st.log_history, list) and st.log_history
    steps = [e["step"] for e in st.log_history]
    assert steps == sorted(steps) and steps[-1] <= step, steps
    assert any("loss" in e and "learning_rate" in e for e in st.log_history)
    if "best_checkpoint" in ours:
        assert isinstance(st.best_metric, float) and st.best_metric == ours["best_value"]
        assert st.best_global_step == int(ours["best_checkpoint"].split("-")[1])
        assert os.path.basename(st.best_model_checkpoint) == ours["best_checkpoint"]
        assert any(e.get("eval_accuracy") == st.best_metric for e in st.log_history)
    else:
        assert st.best_metric is None and st.best_model_checkpoint is None
    assert st.stateful_callbacks == {} and st.is_world_process_zero
    print("ok: %s: the %d fields of TrainerState, %d log_history entries, best_metric %r"
          % (path, len(HF_FIELDS), len(st.log_history), st.best_metric))


def to_v1(ck):
    sp = os.path.join(ck, "sentinel_state.json")
    with open(sp, encoding="utf-8") as f:
        s = json.load(f)
    s["schema"] = "sentinel.trainer_state/1"
    del s["files"]["trainer_state.json"]
    with open(os.path.join(ck, "trainer_state.json"), "w", encoding="utf-8") as f:
        json.dump(s, f, indent=2)
    os.unlink(sp)


if __name__ == "__main__":
    {"check": check, "to-v1": to_v1}[sys.argv[1]](sys.argv[2])
