/* options.c: the defaults of the options both backends share (Triton's
 * CUDAOptions defaults: 4 warps, 1 CTA, 3 stages, fp fusion on). */
#include <string.h>

#include "backend/backend.h"

void be_options_default(BeOptions *o)
{
	memset(o, 0, sizeof *o);
	o->num_warps = 4;
	o->num_ctas = 1;
	o->num_stages = 3;
	o->enable_fp_fusion = true;
	o->enable_reflect_ftz = true;
}
