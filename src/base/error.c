/* Error records and status names. */
#include "base/error.h"

#include <stdio.h>
#include <string.h>

const kvshard__mark kvshard__no_mark = {0, 0, 0};

const char *kvshard_strerror(int code)
{
    switch (code) {
    case KVSHARD_OK: return "success";
    case KVSHARD_ENOMEM: return "out of memory";
    case KVSHARD_EINVAL: return "invalid argument";
    case KVSHARD_EIO: return "cannot read file";
    case KVSHARD_ESYNTAX: return "syntax error";
    case KVSHARD_EUTF8: return "invalid UTF-8";
    case KVSHARD_ELIMIT: return "input exceeds a reading limit";
    case KVSHARD_EDUPKEY: return "duplicate key";
    case KVSHARD_EUNKNOWNKEY: return "unknown key";
    case KVSHARD_ETYPE: return "wrong type";
    case KVSHARD_ERANGE: return "value out of range";
    case KVSHARD_EMISSING: return "missing key";
    case KVSHARD_ELAYERTYPE: return "unknown layer type";
    case KVSHARD_ELAYERCOUNT: return "wrong number of layers";
    case KVSHARD_ELAYERLIST: return "inconsistent layer lists";
    case KVSHARD_EPARALLEL: return "parallel size below 1";
    case KVSHARD_EWORLD: return "world size not divisible by dp_size * cp_size";
    case KVSHARD_ESPLIT: return "attention TP size not divisible by split size";
    case KVSHARD_ESPLITCP: return "layerwise split with context parallelism";
    case KVSHARD_EKVHEADS: return "KV heads and attention TP size do not divide";
    case KVSHARD_ELINEARHEADS: return "linear-attention heads not divisible by TP size";
    case KVSHARD_ERANK: return "TP rank out of range";
    case KVSHARD_ELAYER: return "layer index out of range";
    case KVSHARD_ENOBLOCK: return "no memory for one block";
    case KVSHARD_EOVERFLOW: return "arithmetic overflow";
    case KVSHARD_EWRITE: return "write failed";
    default: return "unknown error";
    }
}

void kvshard__error_reset(kvshard_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

/* Keep the tail of a long path: it names the file; the head is context. */
static void copy_source(char *dst, size_t cap, const char *src)
{
    size_t len = strlen(src);
    if (len < cap) {
        memcpy(dst, src, len + 1);
        return;
    }
    size_t keep = cap - 4;
    memcpy(dst, "...", 3);
    memcpy(dst + 3, src + (len - keep), keep + 1);
}

void kvshard__error_locate(kvshard_error *err, const char *source, kvshard__mark mark)
{
    if (!err)
        return;
    err->line = mark.line;
    err->column = mark.column;
    err->offset = mark.offset;
    copy_source(err->source, sizeof err->source, source);
}

int kvshard__fail(kvshard_error *err, int code, const char *source, kvshard__mark mark,
                  const char *fmt, ...)
{
    if (!err || err->code != KVSHARD_OK)
        return code;
    err->code = code;
    err->line = mark.line;
    err->column = mark.column;
    err->offset = mark.offset;
    copy_source(err->source, sizeof err->source, source ? source : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return code;
}
