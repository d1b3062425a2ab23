/* Whole processes: a launcher forked at start-up runs each program with fork
 * and exec and reports its wall time and peak memory.
 *
 * Why a launcher: Linux reports a child's peak resident set as the larger of
 * its own and that of the memory it was forked from, so children forked
 * from the benchmark itself, once it holds 30 MB texts, would all seem to
 * peak at 30 MB. The launcher is forked before anything large exists and
 * stays small. It also keeps the cost of fork the same for every run. */
#define _DEFAULT_SOURCE /* wait4 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t launcher = -1;
static int to_launcher = -1;
static int from_launcher = -1;

static bool write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

static bool read_all(int fd, void *data, size_t n)
{
    char *p = data;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

/* In the launcher: one run. The clock starts before fork and stops when
 * wait4 returns, so process creation, exec, the program and its exit are
 * all inside. */
static bench_run run_child(char *const *argv)
{
    bench_run run = {0, 0, 0};
    uint64_t t0 = bench_wall_ns();
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
            _exit(126);
        close(null);
        execv(argv[0], argv);
        _exit(127);
    }
    if (pid < 0) {
        run.status = -1;
        return run;
    }
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            run.status = -1;
            return run;
        }
    }
    run.wall_ns = bench_wall_ns() - t0;
    run.maxrss = (uint64_t)ru.ru_maxrss * 1024u; /* Linux reports KiB */
    run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return run;
}

/* Requests: a length, then the arguments, each NUL-terminated. A length of
 * 0 or a closed pipe ends the launcher. */
static _Noreturn void launcher_main(int in, int out)
{
    for (;;) {
        uint32_t len = 0;
        if (!read_all(in, &len, sizeof len) || len == 0)
            _exit(0);
        char *buf = malloc(len);
        if (!buf || !read_all(in, buf, len))
            _exit(1);
        size_t argc = 0;
        for (uint32_t i = 0; i < len; i++)
            argc += buf[i] == '\0';
        char **argv = calloc(argc + 1, sizeof *argv);
        if (!argv)
            _exit(1);
        size_t k = 0;
        for (uint32_t i = 0; i < len; i += (uint32_t)strlen(buf + i) + 1)
            argv[k++] = buf + i;
        bench_run run = run_child(argv);
        free(argv);
        free(buf);
        if (!write_all(out, &run, sizeof run))
            _exit(1);
    }
}

static void cloexec(int fd)
{
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0)
        bench_die("fcntl: %s", strerror(errno));
}

void bench_launcher_start(void)
{
    int req[2], rep[2];
    if (pipe(req) != 0 || pipe(rep) != 0)
        bench_die("pipe: %s", strerror(errno));
    for (int i = 0; i < 2; i++) {
        cloexec(req[i]);
        cloexec(rep[i]);
    }
    fflush(NULL);
    launcher = fork();
    if (launcher < 0)
        bench_die("fork: %s", strerror(errno));
    if (launcher == 0) {
        close(req[1]);
        close(rep[0]);
        launcher_main(req[0], rep[1]);
    }
    close(req[0]);
    close(rep[1]);
    to_launcher = req[1];
    from_launcher = rep[0];
}

void bench_launcher_stop(void)
{
    if (launcher < 0)
        return;
    uint32_t zero = 0;
    (void)write_all(to_launcher, &zero, sizeof zero);
    close(to_launcher);
    close(from_launcher);
    int status;
    while (waitpid(launcher, &status, 0) < 0 && errno == EINTR)
        continue;
    launcher = -1;
}

bench_run bench_spawn(const char *const *argv)
{
    if (launcher < 0)
        bench_die("the launcher is not running");
    size_t len = 0;
    for (size_t i = 0; argv[i]; i++)
        len += strlen(argv[i]) + 1;
    if (len == 0 || len > UINT32_MAX)
        bench_die("bad command for the launcher");
    char *buf = bench_xmalloc(len);
    size_t at = 0;
    for (size_t i = 0; argv[i]; i++) {
        size_t n = strlen(argv[i]) + 1;
        memcpy(buf + at, argv[i], n);
        at += n;
    }
    uint32_t n32 = (uint32_t)len;
    bench_run run;
    if (!write_all(to_launcher, &n32, sizeof n32) || !write_all(to_launcher, buf, len) ||
        !read_all(from_launcher, &run, sizeof run))
        bench_die("the launcher stopped");
    free(buf);
    if (run.status < 0)
        bench_die("cannot run %s", argv[0]);
    return run;
}

double bench_page_fault_ns(void)
{
    const size_t pages = 4096, page = 4096;
    char *p = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    uint64_t t0 = bench_wall_ns();
    for (size_t i = 0; i < pages; i++)
        p[i * page] = 1;
    uint64_t t = bench_wall_ns() - t0;
    munmap(p, pages * page);
    return (double)t / (double)pages;
}
