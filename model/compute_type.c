/* compute_type.c: the names of the compute types and the default model options (model.h).
 * A leaf: the loader (model.c, compute.c) and the packed products (packed*.c) use it. */
#include <string.h>

#include "model.h"

static const char *const compute_names[] = {"default", "float32", "bfloat16", "int8", "auto"};

void mt_model_options_default(mt_model_options *o)
{
    *o = (mt_model_options){.compute_type = MT_COMPUTE_DEFAULT, .split_min = -1};
}

int mt_compute_type_parse(const char *name, mt_compute_type *out)
{
    for (int i = 0; name && i < (int)(sizeof compute_names / sizeof *compute_names); i++)
        if (!strcmp(name, compute_names[i])) {
            *out = (mt_compute_type)i;
            return 0;
        }
    return -1;
}

const char *mt_compute_type_name(mt_compute_type t)
{
    return (int)t >= 0 && (int)t < (int)(sizeof compute_names / sizeof *compute_names) ? compute_names[t] : "?";
}
