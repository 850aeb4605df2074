/* gscratch.c: global scratch memory, the per-program slice of a buffer the
 * launcher gets from the user's allocator (triton.set_allocator).
 *
 * Its users are the tensor maps the kernel makes (tensormap_create): 128
 * bytes each, 128-byte aligned, one slot per op, in program order (as
 * Triton's allocation, no reuse by liveness: a map is read by copies until
 * the loop that issues them ends, and maps are few). Only a map that a
 * tensor copy reads (tma_copy, placed by the pipelining pass) or a tensor
 * store writes through (tma_store) gets a slot; the others (loads left to
 * cp.async, plain stores) get none and the backend makes nothing for them. The kernel's total
 * bytes per program are its "global_scratch" attribute; the launcher asks
 * the allocator for that many bytes times the number of programs, and
 * program p (its linear id over the grid, x fastest) uses bytes
 * [p * total, (p + 1) * total) of the buffer.
 */
#include "analysis.h"

#include <string.h>

/* Removes attribute name from the list, if there. */
static void del_attr(int *nattrs, IrAttr *attrs, const char *name)
{
	for (int i = 0; i < *nattrs; i++)
		if (!strcmp(attrs[i].name, name)) {
			memmove(&attrs[i], &attrs[i + 1], sizeof(IrAttr) * (size_t)(*nattrs - i - 1));
			(*nattrs)--;
			return;
		}
}

bool an_tmap_used(const IrBlock *b, const IrValue *v)
{
	for (const IrOp *op = b->first; op; op = op->next) {
		if ((op->opc == OP_TMA_COPY || op->opc == OP_TMA_STORE) && op->ops[0] == v)
			return true;
		for (int r = 0; r < op->nregions; r++)
			if (an_tmap_used(op->regions[r], v))
				return true;
	}
	return false;
}

static void assign(IrFunc *f, IrBlock *b, int64_t *total)
{
	IrCtx *ctx = f->module->ctx;
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			assign(f, op->regions[r], total);
		if (op->opc != OP_TMAP_CREATE)
			continue;
		if (f->is_kernel && an_tmap_used(f->body, &op->res[0])) {
			ir_op_set_int(ctx, op, "gscratch", *total);
			*total += AN_TMAP_BYTES;
		} else {
			del_attr(&op->nattrs, op->attrs, "gscratch");
		}
	}
}

int64_t an_allocate_global_scratch(IrFunc *f)
{
	int64_t total = 0;
	assign(f, f->body, &total);
	if (total > 0)
		ir_set_attr_int(f->module->ctx, &f->nattrs, &f->attrs, "global_scratch", total);
	else
		del_attr(&f->nattrs, f->attrs, "global_scratch");
	return total;
}

int64_t an_global_scratch(const IrFunc *f)
{
	const IrAttr *a = ir_find_attr(f->nattrs, f->attrs, "global_scratch");
	return a && a->kind == ATTR_INT && a->i > 0 ? a->i : 0;
}
