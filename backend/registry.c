/* ctq backend registry: opens a backend by name (reference, cuda), the
 * activation-numerics switch, and the stand-ins for the CUDA backend in a
 * build without CUDA. The backends themselves live in reference/ (CPU) and
 * kernels/ (CUDA); backend/backend.h is their one interface. */
#include "backend/backend.h"

#include <string.h>

#ifndef CTQ_HAVE_CUDA
enum ctq_status ctq_backend_cuda_tp_init(struct ctq_backend *ranks, int tp, struct ctq_error *err)
{
	(void)ranks;
	(void)tp;
	return ctq_error_set(err, CTQ_ERR_ENV, "--tp",
			     "this ctq was built without CUDA: no NCCL tensor parallelism");
}

enum ctq_status ctq_backend_cuda(struct ctq_backend *b, int device, struct ctq_error *err)
{
	(void)device;
	memset(b, 0, sizeof *b);
	return ctq_error_set(err, CTQ_ERR_ENV, "--backend cuda",
			     "this ctq was built without CUDA (CUDA=0, or no nvcc at build time)");
}
#endif

const char *ctq_act_numerics_name(enum ctq_act_numerics n)
{
	return n == CTQ_ACT_NUMERICS_TRANSFORMERS ? "transformers" : "ctq";
}

bool ctq_act_numerics_parse(const char *s, enum ctq_act_numerics *out)
{
	if (!strcmp(s, "ctq"))
		*out = CTQ_ACT_NUMERICS_CTQ;
	else if (!strcmp(s, "transformers"))
		*out = CTQ_ACT_NUMERICS_TRANSFORMERS;
	else
		return false;
	return true;
}

enum ctq_status ctq_backend_set_act_numerics(struct ctq_backend *b, enum ctq_act_numerics n,
					     struct ctq_error *err)
{
	if (n != CTQ_ACT_NUMERICS_CTQ && strcmp(b->ops->name, "reference") != 0)
		return ctq_error_set(err, CTQ_ERR_USAGE, "--act-numerics",
				     "is %s; the %s backend implements only ctq's numerics (amax / 127, an int8 GEMM): "
				     "use --backend reference", ctq_act_numerics_name(n), b->ops->name);
	b->act_numerics = n;
	return CTQ_OK;
}

enum ctq_status ctq_backend_open(struct ctq_backend *b, const char *name, struct ctq_error *err)
{
	if (!strcmp(name, "reference"))
		return ctq_backend_reference(b, err);
	if (!strcmp(name, "cuda"))
		return ctq_backend_cuda(b, 0, err);
	memset(b, 0, sizeof *b);
	return ctq_error_set(err, CTQ_ERR_USAGE, "--backend", "is \"%s\"; expected reference or cuda",
			     name);
}

void ctq_backend_close(struct ctq_backend *b)
{
	if (b && b->ops && b->ops->destroy)
		b->ops->destroy(b);
	if (b)
		b->ops = NULL;
}
