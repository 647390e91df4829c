/* data/data.h: questions, debate simulation, trajectories, tuples and HDF5 shards
** (DESIGN.md §2, §4, §5; formats in docs/formats.md). The module's one entry point: each part
** has its own section header, included here.
**   data/question.h    question datasets (MMLU, CommonsenseQA, GSM8K, TruthfulQA, MedMCQA,
**                      neutral JSONL, built-in synthetic) and answer extraction
**   data/trajectory.h  reading trajectory files (sentinel.trajectory/1)
**   data/sim/sim.h     the debate engine, attacks, defenses hook, `simulate` runs
**   llm/llm.h          LLM backends (OpenAI-compatible over libcurl; the sim agents: sim.h)
**   data/tuples.h      (context, chosen, rejected, reference) tuple builder
**   data/shard.h       tokenized HDF5 shards, manifest, readers */
#ifndef SN_DATA_H
#define SN_DATA_H
#include "data/question.h"
#include "data/trajectory.h"
#include "llm/llm.h"
#include "data/sim/sim.h"
#include "data/tuples.h"
#include "data/shard.h"
#endif
