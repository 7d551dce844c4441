/* error.h: the former name of status.h, kept while translator/ and server/ still include
 * it; new code includes "status.h" (mt_status, mt_error, mt_strfmt). */
#ifndef MT_UTIL_ERROR_H
#define MT_UTIL_ERROR_H

#include "status.h"

#endif
