/* data/question.h: placeholder; its owner fills it in. */
#ifndef SN_DATA_QUESTION_H
#define SN_DATA_QUESTION_H
#include "common/common.h"
#endif
