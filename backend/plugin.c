/* Kernel plug-ins: the loader and the backend adapter (see plugin.h). */
#include "backend/plugin.h"
#include "core/arena.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* The ABI promises 256-byte aligned buffers; ctq_malloc gives 16. */
#define PLUGIN_ALIGN 256

static bool name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 1 || n > 31)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '+' || c == '-'))
			return false;
	}
	/* ctq's own backend names stay ctq's in every CSV. */
	return strcmp(s, "reference") && strcmp(s, "cuda") && strcmp(s, "both");
}

/* The table's checks; the first failure names the member. */
static enum ctq_status check_table(const struct ctq_kernel_plugin *t, const char *path,
				   struct ctq_error *err)
{
	if (!t)
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "%s(%u) returned NULL: the plug-in does not serve kernel plug-in ABI "
				     "version %u", CTQ_KERNEL_PLUGIN_ENTRY, CTQ_KERNEL_PLUGIN_ABI_VERSION,
				     CTQ_KERNEL_PLUGIN_ABI_VERSION);
	if (t->abi_version != CTQ_KERNEL_PLUGIN_ABI_VERSION)
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "implements kernel plug-in ABI version %u; this ctq speaks version %u "
				     "(rebuild the plug-in against include/ctq_kernel_plugin.h)",
				     t->abi_version, CTQ_KERNEL_PLUGIN_ABI_VERSION);
	if (t->struct_size < sizeof *t)
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "has a struct ctq_kernel_plugin of %u bytes; ABI version %u's is %zu "
				     "(rebuild the plug-in against include/ctq_kernel_plugin.h)",
				     t->struct_size, CTQ_KERNEL_PLUGIN_ABI_VERSION, sizeof *t);
	if (!name_ok(t->name))
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "has name \"%.64s\"; expected 1 to 31 characters of [A-Za-z0-9_.+-], "
				     "not reference, cuda or both", t->name ? t->name : "(null)");
	if (t->device != CTQ_KERNEL_PLUGIN_DEVICE_CPU && t->device != CTQ_KERNEL_PLUGIN_DEVICE_CUDA)
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "has device %d; expected %d (CPU) or %d (CUDA)", (int)t->device,
				     CTQ_KERNEL_PLUGIN_DEVICE_CPU, CTQ_KERNEL_PLUGIN_DEVICE_CUDA);
	const char *missing = !t->quantize ? "quantize" : !t->gemm_w8a8 ? "gemm_w8a8" : NULL;
	if (missing)
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "plug-in %s has no %s function (a required member of struct "
				     "ctq_kernel_plugin)", t->name, missing);
	if (t->caps & ~(unsigned)(CTQ_KERNEL_PLUGIN_QUANT_EXACT | CTQ_KERNEL_PLUGIN_GEMM_EXACT))
		return ctq_error_set(err, CTQ_ERR_USAGE, path,
				     "plug-in %s declares capability bits 0x%x unknown to ABI version %u",
				     t->name, t->caps, CTQ_KERNEL_PLUGIN_ABI_VERSION);
	return CTQ_OK;
}

enum ctq_status ctq_kernel_lib_open(struct ctq_kernel_lib *l, const char *path,
				    struct ctq_error *err)
{
	memset(l, 0, sizeof *l);
	snprintf(l->path, sizeof l->path, "%s", path);
	/* dlopen searches the library path for a bare name; a plug-in is a
	 * file the user names, so a name without '/' is taken from here. */
	char local[CTQ_PATH_MAX + 2];
	snprintf(local, sizeof local, "%s%s", strchr(path, '/') ? "" : "./", path);
	dlerror();
	l->handle = dlopen(local, RTLD_NOW | RTLD_LOCAL);
	if (!l->handle) {
		const char *e = dlerror();
		return ctq_error_set(err, CTQ_ERR_USAGE, path, "cannot load the kernel plug-in: %s",
				     e ? e : "dlopen failed");
	}
	dlerror();
	void *sym = dlsym(l->handle, CTQ_KERNEL_PLUGIN_ENTRY);
	const char *e = dlerror();
	enum ctq_status st = CTQ_OK;
	if (e || !sym) {
		st = ctq_error_set(err, CTQ_ERR_USAGE, path,
				   "is not a ctq kernel plug-in: no entry symbol %s (%s); see "
				   "include/ctq_kernel_plugin.h", CTQ_KERNEL_PLUGIN_ENTRY,
				   e ? e : "the symbol is NULL");
		goto fail;
	}
	/* A function pointer from dlsym's object pointer (POSIX guarantees it). */
	ctq_kernel_plugin_entry_fn entry;
	memcpy(&entry, &sym, sizeof entry);
	l->t = entry(CTQ_KERNEL_PLUGIN_ABI_VERSION);
	if ((st = check_table(l->t, path, err)))
		goto fail;
	return CTQ_OK;
fail:
	ctq_kernel_lib_close(l);
	return st;
}

enum ctq_status ctq_kernel_lib_init(struct ctq_kernel_lib *l, struct ctq_error *err)
{
	if (l->inited)
		return CTQ_OK;
	if (l->t->init) {
		char msg[512] = "";
		if (l->t->init(msg, sizeof msg)) {
			msg[sizeof msg - 1] = '\0';
			return ctq_error_set(err, CTQ_ERR_ENV, l->path, "plug-in %s: init failed: %s",
					     l->t->name, msg[0] ? msg : "(no message)");
		}
	}
	l->inited = true;
	return CTQ_OK;
}

void ctq_kernel_lib_close(struct ctq_kernel_lib *l)
{
	if (!l)
		return;
	if (l->inited && l->t && l->t->fini)
		l->t->fini();
	if (l->handle)
		dlclose(l->handle);
	l->handle = NULL;
	l->t = NULL;
	l->inited = false;
}

const char *ctq_kernel_lib_device_name(const struct ctq_kernel_lib *l)
{
	return l->t && l->t->device == CTQ_KERNEL_PLUGIN_DEVICE_CUDA ? "cuda" : "cpu";
}

/* ---- the backend adapter ------------------------------------------------ */

struct plugin_impl {
	struct ctq_backend_ops ops;  /* per instance: ops.name is the plug-in's */
	struct ctq_kernel_lib lib;
	struct ctq_backend mem;      /* ctq's CUDA backend for a CUDA plug-in's memory */
	bool cuda;
	void *gws;                   /* gemm_w8a8's workspace, grown on demand */
	size_t gws_bytes;
};

static struct plugin_impl *pimpl(struct ctq_backend *b) { return (struct plugin_impl *)b->impl; }

static void *pl_stream(struct plugin_impl *p)
{
	return p->cuda && p->mem.ops->stream ? p->mem.ops->stream(&p->mem) : NULL;
}

static enum ctq_status pl_alloc(struct ctq_backend *b, size_t n, void **out, struct ctq_error *err)
{
	struct plugin_impl *p = pimpl(b);
	if (p->cuda)
		return p->mem.ops->alloc(&p->mem, n, out, err);
	/* Host: over-allocate, keep the block's start just below the aligned
	 * pointer. */
	char *raw = ctq_malloc(n + PLUGIN_ALIGN + sizeof(void *));
	if (!raw)
		return ctq_error_set(err, CTQ_ERR_NOMEM, p->ops.name, "out of memory (%zu bytes)", n);
	uintptr_t a = ((uintptr_t)raw + sizeof(void *) + PLUGIN_ALIGN - 1) & ~(uintptr_t)(PLUGIN_ALIGN - 1);
	memcpy((char *)a - sizeof(void *), &raw, sizeof raw);
	*out = (void *)a;
	return CTQ_OK;
}

static void pl_free(struct ctq_backend *b, void *ptr)
{
	struct plugin_impl *p = pimpl(b);
	if (!ptr)
		return;
	if (p->cuda) {
		p->mem.ops->free(&p->mem, ptr);
		return;
	}
	void *raw;
	memcpy(&raw, (char *)ptr - sizeof(void *), sizeof raw);
	ctq_free(raw);
}

static enum ctq_status pl_upload(struct ctq_backend *b, void *dst, const void *src, size_t n,
				 struct ctq_error *err)
{
	struct plugin_impl *p = pimpl(b);
	if (p->cuda)
		return p->mem.ops->upload(&p->mem, dst, src, n, err);
	memcpy(dst, src, n);
	return CTQ_OK;
}

static enum ctq_status pl_download(struct ctq_backend *b, void *dst, const void *src, size_t n,
				   struct ctq_error *err)
{
	struct plugin_impl *p = pimpl(b);
	if (p->cuda)
		return p->mem.ops->download(&p->mem, dst, src, n, err);
	memcpy(dst, src, n);
	return CTQ_OK;
}

static enum ctq_status pl_sync(struct ctq_backend *b, struct ctq_error *err)
{
	struct plugin_impl *p = pimpl(b);
	return p->cuda ? p->mem.ops->sync(&p->mem, err) : CTQ_OK;
}

/* A plug-in's non-zero return as an error naming it and the call. */
static enum ctq_status pl_failed(struct plugin_impl *p, const char *fn, int rc, char *msg,
				 size_t cap, struct ctq_error *err)
{
	msg[cap - 1] = '\0';
	return ctq_error_set(err, CTQ_ERR_ENV, p->lib.path, "plug-in %s: %s returned %d: %s",
			     p->ops.name, fn, rc, msg[0] ? msg : "(no message)");
}

static enum ctq_status pl_quantize(struct ctq_backend *b, const void *x, int64_t M, int64_t K,
				   void *q, void *s, struct ctq_error *err)
{
	struct plugin_impl *p = pimpl(b);
	char msg[512] = "";
	int rc = p->lib.t->quantize(x, M, K, q, s, pl_stream(p), msg, sizeof msg);
	if (rc)
		return pl_failed(p, "quantize", rc, msg, sizeof msg, err);
	return pl_sync(b, err);
}

static enum ctq_status pl_linear(struct ctq_backend *b, const void *x, const void *w,
				 const void *s_w, const void *bias, int64_t M, int64_t N, int64_t K,
				 void *y, void *ws, struct ctq_error *err)
{
	struct plugin_impl *p = pimpl(b);
	const struct ctq_kernel_plugin *t = p->lib.t;
	size_t need = t->gemm_workspace_bytes ? t->gemm_workspace_bytes(M, N, K) : 0;
	enum ctq_status st;
	if (need > p->gws_bytes) {
		pl_free(b, p->gws);
		p->gws = NULL;
		p->gws_bytes = 0;
		if ((st = pl_alloc(b, need, &p->gws, err)))
			return st;
		p->gws_bytes = need;
	}
	char msg[512] = "";
	int8_t *q = ws;
	float *s = ctq_w8a8_workspace_scales(ws, M, K);
	int rc = t->quantize(x, M, K, q, s, pl_stream(p), msg, sizeof msg);
	if (rc)
		return pl_failed(p, "quantize", rc, msg, sizeof msg, err);
	rc = t->gemm_w8a8(q, s, w, s_w, bias, M, N, K, y, need ? p->gws : NULL, need, pl_stream(p), msg,
			  sizeof msg);
	if (rc)
		return pl_failed(p, "gemm_w8a8", rc, msg, sizeof msg, err);
	return pl_sync(b, err);
}

static enum ctq_status pl_gemm_bf16(struct ctq_backend *b, const void *x, const void *w,
				    const void *bias, int64_t M, int64_t N, int64_t K, void *y,
				    struct ctq_error *err)
{
	struct plugin_impl *p = pimpl(b);
	char msg[512] = "";
	int rc = p->lib.t->gemm_bf16(x, w, bias, M, N, K, y, pl_stream(p), msg, sizeof msg);
	if (rc)
		return pl_failed(p, "gemm_bf16", rc, msg, sizeof msg, err);
	return pl_sync(b, err);
}

static void pl_describe(struct ctq_backend *b, char *buf, size_t cap)
{
	struct plugin_impl *p = pimpl(b);
	const struct ctq_kernel_plugin *t = p->lib.t;
	char dev[256] = "host memory";
	if (p->cuda)
		p->mem.ops->describe(&p->mem, dev, sizeof dev);
	snprintf(buf, cap, "kernel plug-in %s (%s, ABI %u, %s; bit-exact: %s%s%s; bf16 gemm: %s) on %s",
		 t->name, p->lib.path, t->abi_version, ctq_kernel_lib_device_name(&p->lib),
		 t->caps & CTQ_KERNEL_PLUGIN_QUANT_EXACT ? "quantize" : "",
		 (t->caps & CTQ_KERNEL_PLUGIN_QUANT_EXACT) && (t->caps & CTQ_KERNEL_PLUGIN_GEMM_EXACT) ? ", " : "",
		 t->caps & CTQ_KERNEL_PLUGIN_GEMM_EXACT ? "gemm" : (t->caps ? "" : "none"),
		 t->gemm_bf16 ? "yes" : "no", dev);
}

static void pl_destroy(struct ctq_backend *b)
{
	struct plugin_impl *p = pimpl(b);
	if (!p)
		return;
	if (p->lib.t)
		pl_free(b, p->gws);
	ctq_kernel_lib_close(&p->lib);
	ctq_backend_close(&p->mem);
	ctq_free(p);
	b->impl = NULL;
}

enum ctq_status ctq_backend_plugin(struct ctq_backend *b, const char *path, struct ctq_error *err)
{
	memset(b, 0, sizeof *b);
	struct plugin_impl *p = ctq_calloc(1, sizeof *p);
	if (!p)
		return ctq_error_set(err, CTQ_ERR_NOMEM, path, "out of memory");
	enum ctq_status st = ctq_kernel_lib_open(&p->lib, path, err);
	if (st)
		goto fail;
	const struct ctq_kernel_plugin *t = p->lib.t;
	p->cuda = t->device == CTQ_KERNEL_PLUGIN_DEVICE_CUDA;
	if (p->cuda && (st = ctq_backend_cuda(&p->mem, 0, err))) {
		/* The reason stays ctq's (no GPU, no CUDA build); the path is the plug-in's. */
		if (err)
			snprintf(err->path, sizeof err->path, "%s", path);
		goto fail;
	}
	/* After the CUDA backend, so the plug-in finds its device current. */
	if ((st = ctq_kernel_lib_init(&p->lib, err)))
		goto fail;
	p->ops = (struct ctq_backend_ops){
		.name = t->name,
		.destroy = pl_destroy,
		.describe = pl_describe,
		.alloc = pl_alloc,
		.free = pl_free,
		.upload = pl_upload,
		.download = pl_download,
		.sync = pl_sync,
		.quantize = pl_quantize,
		.w8a8_linear = pl_linear,
		.gemm_bf16 = t->gemm_bf16 ? pl_gemm_bf16 : NULL,
		.act_bytes = 2,
	};
	b->ops = &p->ops;
	b->impl = p;
	/* y is compared bit for bit end to end, so only when q and s are
	 * exact too. */
	const unsigned both = CTQ_KERNEL_PLUGIN_QUANT_EXACT | CTQ_KERNEL_PLUGIN_GEMM_EXACT;
	b->exact = (t->caps & CTQ_KERNEL_PLUGIN_QUANT_EXACT ? CTQ_EXACT_QUANT : 0u) |
		   ((t->caps & both) == both ? CTQ_EXACT_OUTPUT : 0u);
	return CTQ_OK;
fail:
	ctq_kernel_lib_close(&p->lib);
	ctq_backend_close(&p->mem);
	ctq_free(p);
	return st;
}
