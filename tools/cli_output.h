/* What the kvshard CLI prints and writes: messages that are safe on a
 * terminal, and the document's target, which is never a file kvshard read
 * and is replaced whole or not at all. */
#ifndef KVSHARD_TOOLS_CLI_OUTPUT_H
#define KVSHARD_TOOLS_CLI_OUTPUT_H

#include <kvshard/kvshard.h>

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#if defined(__GNUC__) || defined(__clang__)
#define KVSHARD_CLI__PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define KVSHARD_CLI__PRINTF(fmt, args)
#endif

enum { KVSHARD_CLI__EXIT_INVALID = 1, KVSHARD_CLI__EXIT_USAGE = 2 };

/* Print one line to standard error, the whole of it escaped as the
 * library escapes its messages (escaped text stays as it is, so library
 * messages pass through unchanged). Names in it should be shortened first
 * (kvshard_cli__shorten, kvshard_cli__excerpt). */
void kvshard_cli__say(const char *fmt, ...) KVSHARD_CLI__PRINTF(1, 2);
/* A path escaped into `out`; when it does not fit, its tail after "...". */
void kvshard_cli__shorten(char *out, size_t cap, const char *text);
/* At most `max` bytes of `text`, escaped, with "..." when cut. */
void kvshard_cli__excerpt(char *out, size_t cap, const char *text, size_t max);

/* ---- the files kvshard read --------------------------------------------------------------- */

/* A file by device and inode. */
typedef struct kvshard_cli__file_id {
    uint64_t dev, ino;
} kvshard_cli__file_id;

typedef struct kvshard_cli__input {
    kvshard_cli__file_id id;
    const char *what; /* "the CONFIG file", "the model file", "the flag file", ... */
    char *shown;      /* the path, shortened for messages */
} kvshard_cli__input;

/* Every file a run read, by device and inode: the CONFIG, the model config
 * the deployment names, each flag file, and the safetensors index and
 * shards a plan, comparison or fit read for device inputs. */
typedef struct kvshard_cli__inputs {
    kvshard_cli__input *items;
    size_t count, cap;
    bool out_of_memory; /* a file could not be noted: no output is written */
} kvshard_cli__inputs;

/* Note `path` as read (a file that cannot be stat'ed now is skipped: no
 * output can be it). */
void kvshard_cli__input_add(kvshard_cli__inputs *in, const char *what, const char *path);
/* A kvshard_file_fn: every file the library reads for a deployment (the
 * CONFIG, the model config, each flag file, and the weights its plans
 * open); `user` is the inputs. */
void kvshard_cli__input_read(void *user, kvshard_file_role role, const char *path);
void kvshard_cli__inputs_free(kvshard_cli__inputs *in);
/* Whether `source`, an error's source, names one of the run's flag files:
 * it is compared with their paths shortened as an error shortens them. */
bool kvshard_cli__is_flagfile(const kvshard_cli__inputs *in, const char *source);

/* ---- the output ---------------------------------------------------------------------------- */

typedef enum kvshard_cli__how {
    KVSHARD_CLI__TO_FD,     /* standard output, or /dev/stdout, /dev/fd/N: that descriptor */
    KVSHARD_CLI__TO_DEVICE, /* an existing FIFO or character device, opened and written */
    KVSHARD_CLI__TO_FILE    /* a regular file: a temporary file renamed over it */
} kvshard_cli__how;

typedef struct kvshard_cli__output {
    kvshard_cli__how how;
    bool is_stdout;                       /* no -o, or -o - */
    char shown[KVSHARD_ERROR_SOURCE_MAX]; /* the target for messages */
    char *target;                         /* TO_DEVICE, TO_FILE: the path opened or renamed over */
    char *temp;                           /* TO_FILE: the temporary file while it exists */
    int fd;                               /* -1 until open */
    bool own_fd;                          /* closed by us (not an inherited descriptor) */
    bool keep_mode;                       /* replacing a file: give the new one its mode */
    mode_t mode;
    int error; /* errno of the first failed write, 0 when none */
} kvshard_cli__output;

/* Settle where the document goes (`name` NULL or "-": standard output)
 * before anything is opened or written. A target that is the same file as
 * an input is refused (exit 2), and so are a directory, a block device, a
 * socket and a dangling symbolic link (exit 1), each with the reason
 * printed. Returns 0 or the exit status. */
int kvshard_cli__output_prepare(kvshard_cli__output *o, const char *name,
                                const kvshard_cli__inputs *in);
/* Check the target again once the document is made: the plan, comparison
 * or fit read the model's safetensors files only then. The same refusal
 * as prepare's; 0 when the target is none of the inputs. */
int kvshard_cli__output_recheck(const kvshard_cli__output *o, const kvshard_cli__inputs *in);
/* Open the target: create the temporary file beside a regular file, or
 * open the FIFO or device. Returns 0 or the exit status, having said why. */
int kvshard_cli__output_open(kvshard_cli__output *o);
/* A kvshard_write_fn: `user` is the kvshard_cli__output. */
int kvshard_cli__output_write(void *user, const char *data, size_t len);
/* End the document with the writer's status `rc`: on KVSHARD_OK flush,
 * close and rename the temporary file over the target; on any failure
 * remove it and leave the target as it was. Returns the exit status. */
int kvshard_cli__output_finish(kvshard_cli__output *o, int rc);
/* Free what prepare allocated; removes a temporary file still there. */
void kvshard_cli__output_free(kvshard_cli__output *o);

#endif /* KVSHARD_TOOLS_CLI_OUTPUT_H */
