/* Models from text and from files: the public load calls. */
#define _POSIX_C_SOURCE 200809L
#include "model/load.h"

#include "base/call.h"
#include "model/read.h"
#include "text/file.h"

#include <string.h>

static int load_text(kvshard_model **out, const char *text, size_t len, const char *source,
                     const kvshard_allocator *alloc, kvshard_error *err)
{
    kvshard__doc doc;
    int rc = kvshard_doc__parse(&doc, text, len, source, alloc, err);
    if (rc)
        return rc;
    kvshard__node root = kvshard_tape__doc_root(&doc);
    rc = kvshard_model__from_node(out, &doc, &root, alloc, err);
    kvshard_tape__doc_free(&doc);
    return rc;
}

int kvshard_model__load_path(kvshard_model **out, const char *path, const kvshard_allocator *alloc,
                             kvshard_error *err)
{
    char *file = NULL, *text = NULL;
    size_t len;
    int rc = kvshard_file__config_path(&file, alloc, path, err);
    if (rc)
        return rc;
    if ((rc = kvshard_file__read_file(&text, &len, alloc, file, err)) == KVSHARD_OK)
        rc = load_text(out, text, len, file, alloc, err);
    if (rc == KVSHARD_OK)
        (*out)->from_file = true;
    kvshard_alloc__free(alloc, text);
    kvshard_alloc__free(alloc, file);
    return rc;
}

int kvshard_load__begin_load(kvshard_allocator *alloc, bool args_ok, const char *args,
                        const kvshard_load_options *options, kvshard_error *err)
{
    int rc = kvshard_call__begin(err, args_ok, args);
    if (rc == KVSHARD_OK && options)
        rc = kvshard_call__size(err, "kvshard_load_options", options->size, sizeof *options,
                                "KVSHARD_LOAD_OPTIONS_INIT");
    if (rc == KVSHARD_OK && options)
        rc = kvshard_call__allocator(err, options->allocator);
    if (rc == KVSHARD_OK)
        *alloc = kvshard_alloc__allocator_or_default(options ? options->allocator : NULL);
    return rc;
}

int kvshard_model_load_string(kvshard_model **out, const char *text, size_t len, const char *name,
                              const kvshard_load_options *options, kvshard_error *err)
{
    kvshard_allocator a;
    int rc = kvshard_load__begin_load(&a, out && text, "out and text", options, err);
    if (rc)
        return rc;
    return load_text(out, text, len, name ? name : "<string>", &a, err);
}

int kvshard_model_load_file(kvshard_model **out, const char *path,
                            const kvshard_load_options *options, kvshard_error *err)
{
    kvshard_allocator a;
    int rc = kvshard_load__begin_load(&a, out && path, "out and path", options, err);
    if (rc)
        return rc;
    return kvshard_model__load_path(out, path, &a, err);
}

