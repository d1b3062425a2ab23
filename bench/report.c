/* Results: sections of rows of figures, the targets, the machine; printed as
 * a table and written as JSON. */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* ---- building ------------------------------------------------------------------------------ */

bench_section *bench_section_add(bench_report *r, const char *title, const char *note_fmt, ...)
{
    if (r->section_count == BENCH_MAX_SECTIONS)
        bench_die("too many sections");
    bench_section *s = &r->sections[r->section_count++];
    memset(s, 0, sizeof *s);
    snprintf(s->title, sizeof s->title, "%s", title);
    if (note_fmt) {
        va_list ap;
        va_start(ap, note_fmt);
        vsnprintf(s->note, sizeof s->note, note_fmt, ap);
        va_end(ap);
    }
    return s;
}

bench_row *bench_row_add(bench_section *s, const char *label_fmt, ...)
{
    if (s->count == BENCH_MAX_ROWS)
        bench_die("too many rows in \"%s\"", s->title);
    bench_row *row = &s->rows[s->count++];
    memset(row, 0, sizeof *row);
    va_list ap;
    va_start(ap, label_fmt);
    vsnprintf(row->label, sizeof row->label, label_fmt, ap);
    va_end(ap);
    return row;
}

void bench_fig(bench_row *row, const char *name, bench_unit unit, double value)
{
    if (row->count == BENCH_MAX_FIGURES)
        bench_die("too many figures in row \"%s\"", row->label);
    bench_figure f = {name, unit, value, false, 0, 0};
    row->figures[row->count++] = f;
}

void bench_fig_stats(bench_row *row, const char *name, bench_unit unit, const bench_stats *st)
{
    bench_fig(row, name, unit, st->median);
    bench_figure *f = &row->figures[row->count - 1];
    f->spread = st->n > 2;
    f->lo = st->p10;
    f->hi = st->p90;
}

static bench_target *new_target(bench_report *r)
{
    if (r->target_count == BENCH_MAX_TARGETS)
        bench_die("too many targets");
    bench_target *t = &r->targets[r->target_count++];
    memset(t, 0, sizeof *t);
    return t;
}

bench_target *bench_target_add(bench_report *r, const char *name, double value, double limit,
                               bool at_least, const char *how_fmt, ...)
{
    bench_target *t = new_target(r);
    snprintf(t->name, sizeof t->name, "%s", name);
    va_list ap;
    va_start(ap, how_fmt);
    vsnprintf(t->how, sizeof t->how, how_fmt, ap);
    va_end(ap);
    t->value = value;
    t->limit = limit;
    t->at_least = at_least;
    t->measured = true;
    t->pass = !isnan(value) && (at_least ? value >= limit : value <= limit);
    return t;
}

void bench_target_skip(bench_report *r, const char *name, double limit, bool at_least)
{
    bench_target *t = new_target(r);
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->how, sizeof t->how, "not run (--only)");
    t->limit = limit;
    t->at_least = at_least;
}

bool bench_all_pass(const bench_report *r)
{
    for (size_t i = 0; i < r->target_count; i++) {
        if (r->targets[i].measured && !r->targets[i].pass)
            return false;
    }
    return true;
}

/* ---- the machine ---------------------------------------------------------------------------- */

void bench_loadavg(double out[3])
{
    out[0] = out[1] = out[2] = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f)
        return;
    if (fscanf(f, "%lf %lf %lf", &out[0], &out[1], &out[2]) != 3)
        out[0] = out[1] = out[2] = -1;
    fclose(f);
}

void bench_machine_read(bench_machine *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->cpu, sizeof m->cpu, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) != 0)
                continue;
            const char *v = strchr(line, ':');
            if (!v)
                continue;
            v++;
            while (*v == ' ' || *v == '\t')
                v++;
            snprintf(m->cpu, sizeof m->cpu, "%s", v);
            m->cpu[strcspn(m->cpu, "\n")] = '\0';
            break;
        }
        fclose(f);
    }
    m->cores = sysconf(_SC_NPROCESSORS_ONLN);
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(m->kernel, sizeof m->kernel, "%s %s %s", u.sysname, u.release, u.machine);
    bench_loadavg(m->load_start);
    m->fault_ns_start = bench_page_fault_ns();
}

/* ---- formatting -------------------------------------------------------------------------------
 */

static void format_value(char *buf, size_t cap, bench_unit unit, double v)
{
    if (isnan(v)) {
        snprintf(buf, cap, "-");
        return;
    }
    switch (unit) {
    case BENCH_UNIT_NS:
        if (v < 10)
            snprintf(buf, cap, "%.2f ns", v);
        else if (v < 1e3)
            snprintf(buf, cap, "%.0f ns", v);
        else if (v < 1e6)
            snprintf(buf, cap, "%.1f us", v / 1e3);
        else if (v < 1e9)
            snprintf(buf, cap, "%.2f ms", v / 1e6);
        else
            snprintf(buf, cap, "%.3f s", v / 1e9);
        break;
    case BENCH_UNIT_RATIO: snprintf(buf, cap, "%.3fx", v); break;
    case BENCH_UNIT_BYTES:
        if (v < 10240)
            snprintf(buf, cap, "%.0f B", v);
        else if (v < 10485760)
            snprintf(buf, cap, "%.1f KiB", v / 1024);
        else
            snprintf(buf, cap, "%.1f MiB", v / 1048576);
        break;
    case BENCH_UNIT_PER_ENTRY: snprintf(buf, cap, "%.2f B/entry", v); break;
    case BENCH_UNIT_MBPS: snprintf(buf, cap, "%.0f MB/s", v); break;
    case BENCH_UNIT_COUNT:
    default: snprintf(buf, cap, "%.0f", v); break;
    }
}

/* The bare number of a figure, for the spread next to it. */
static void format_bare(char *buf, size_t cap, bench_unit unit, double v)
{
    format_value(buf, cap, unit, v);
    if (unit == BENCH_UNIT_RATIO) {
        size_t n = strlen(buf);
        if (n && buf[n - 1] == 'x')
            buf[n - 1] = '\0';
    }
}

static void format_figure(char *buf, size_t cap, const bench_figure *f)
{
    char v[48];
    format_value(v, sizeof v, f->unit, f->value);
    if (!f->spread) {
        snprintf(buf, cap, "%s", v);
        return;
    }
    char lo[48], hi[48];
    format_bare(lo, sizeof lo, f->unit, f->lo);
    format_bare(hi, sizeof hi, f->unit, f->hi);
    snprintf(buf, cap, "%s [%s..%s]", v, lo, hi);
}

/* ---- the table ----------------------------------------------------------------------------------
 */

#define CELL 72

static void print_section(FILE *f, const bench_section *s)
{
    fprintf(f, "%s\n", s->title);
    if (s->note[0]) {
        /* Notes are written as one paragraph; wrap them at 96 columns. */
        const char *p = s->note;
        while (*p) {
            size_t n = strlen(p);
            size_t take = n;
            if (n > 94) {
                take = 94;
                while (take > 0 && p[take] != ' ')
                    take--;
                if (take == 0)
                    take = 94;
            }
            fprintf(f, "  %.*s\n", (int)take, p);
            p += take;
            while (*p == ' ')
                p++;
        }
    }
    /* Columns: the union of the rows' figure names, in order of appearance. */
    const char *cols[BENCH_MAX_FIGURES * 2];
    size_t ncols = 0;
    for (size_t i = 0; i < s->count; i++) {
        for (size_t k = 0; k < s->rows[i].count; k++) {
            const char *name = s->rows[i].figures[k].name;
            size_t c = 0;
            while (c < ncols && strcmp(cols[c], name) != 0)
                c++;
            if (c == ncols && ncols < sizeof cols / sizeof cols[0])
                cols[ncols++] = name;
        }
    }
    size_t width[1 + BENCH_MAX_FIGURES * 2];
    width[0] = 0;
    for (size_t i = 0; i < s->count; i++) {
        size_t n = strlen(s->rows[i].label);
        width[0] = n > width[0] ? n : width[0];
    }
    static char cells[BENCH_MAX_ROWS][BENCH_MAX_FIGURES * 2][CELL];
    for (size_t c = 0; c < ncols; c++) {
        width[c + 1] = strlen(cols[c]);
        for (size_t i = 0; i < s->count; i++) {
            const bench_row *row = &s->rows[i];
            snprintf(cells[i][c], CELL, "-");
            for (size_t k = 0; k < row->count; k++) {
                if (strcmp(row->figures[k].name, cols[c]) == 0)
                    format_figure(cells[i][c], CELL, &row->figures[k]);
            }
            size_t n = strlen(cells[i][c]);
            width[c + 1] = n > width[c + 1] ? n : width[c + 1];
        }
    }
    fprintf(f, "  %-*s", (int)width[0], "");
    for (size_t c = 0; c < ncols; c++)
        fprintf(f, "  %*s", (int)width[c + 1], cols[c]);
    fputc('\n', f);
    for (size_t i = 0; i < s->count; i++) {
        fprintf(f, "  %-*s", (int)width[0], s->rows[i].label);
        for (size_t c = 0; c < ncols; c++)
            fprintf(f, "  %*s", (int)width[c + 1], cells[i][c]);
        fputc('\n', f);
    }
    fputc('\n', f);
}

static void format_limit(char *buf, size_t cap, const bench_target *t)
{
    snprintf(buf, cap, "%s %.2f", t->at_least ? ">=" : "<=", t->limit);
}

void bench_print_table(FILE *f, const bench_report *r)
{
    const bench_settings *s = r->settings;
    const bench_machine *m = &r->machine;
    fprintf(f, "kvshard %s benchmark%s\n", kvshard_version(), s->quick ? " (--quick)" : "");
    fprintf(f, "machine: %s, %ld cores, %s\n", m->cpu, m->cores, m->kernel);
    fprintf(f, "load average: %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end\n",
            m->load_start[0], m->load_start[1], m->load_start[2], m->load_end[0], m->load_end[1],
            m->load_end[2]);
    fprintf(f, "first touch of a fresh page: %.2f us at the start, %.2f us at the end\n",
            m->fault_ns_start / 1e3, m->fault_ns_end / 1e3);
    fprintf(f,
            "in-process times: %s, median [p10..p90] over pairs of batches of >= %.1f ms; "
            "processes: wall clock\n\n",
            bench_clock_name(), (double)s->batch_ns / 1e6);
    for (size_t i = 0; i < r->section_count; i++)
        print_section(f, &r->sections[i]);

    fprintf(f, "Targets (each a ratio of figures measured in this run)\n");
    size_t wname = 0;
    for (size_t i = 0; i < r->target_count; i++) {
        size_t n = strlen(r->targets[i].name);
        wname = n > wname ? n : wname;
    }
    size_t passed = 0, measured = 0;
    for (size_t i = 0; i < r->target_count; i++) {
        const bench_target *t = &r->targets[i];
        char limit[48], value[48];
        format_limit(limit, sizeof limit, t);
        if (t->measured)
            snprintf(value, sizeof value, "%.3f", t->value);
        else
            snprintf(value, sizeof value, "-");
        fprintf(f, "  %s  %-*s  %8s  %-8s  %s\n",
                !t->measured ? "SKIP"
                : t->pass    ? "PASS"
                             : "FAIL",
                (int)wname, t->name, value, limit, t->how);
        measured += t->measured;
        passed += t->measured && t->pass;
    }
    fprintf(f, "%zu of %zu measured targets met", passed, measured);
    if (measured < r->target_count)
        fprintf(f, " (%zu not run)", r->target_count - measured);
    fprintf(f, "; %.1f s in all\n", r->seconds);
}

/* ---- JSON
 * ------------------------------------------------------------------------------------------ */

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void json_number(FILE *f, double v)
{
    if (isnan(v) || isinf(v))
        fputs("null", f);
    else
        fprintf(f, "%.6g", v);
}

static const char *unit_name(bench_unit u)
{
    switch (u) {
    case BENCH_UNIT_NS: return "ns";
    case BENCH_UNIT_RATIO: return "ratio";
    case BENCH_UNIT_BYTES: return "bytes";
    case BENCH_UNIT_PER_ENTRY: return "bytes_per_entry";
    case BENCH_UNIT_MBPS: return "MB/s";
    case BENCH_UNIT_COUNT:
    default: return "count";
    }
}

static void json_section(FILE *f, const bench_section *s)
{
    fputs("    {\"title\": ", f);
    json_string(f, s->title);
    fputs(", \"note\": ", f);
    json_string(f, s->note);
    fputs(", \"rows\": [", f);
    for (size_t i = 0; i < s->count; i++) {
        const bench_row *row = &s->rows[i];
        fputs(i ? ",\n      {\"label\": " : "\n      {\"label\": ", f);
        json_string(f, row->label);
        fputs(", \"figures\": [", f);
        for (size_t k = 0; k < row->count; k++) {
            const bench_figure *fig = &row->figures[k];
            fputs(k ? ", {\"name\": " : "{\"name\": ", f);
            json_string(f, fig->name);
            fprintf(f, ", \"unit\": \"%s\", \"value\": ", unit_name(fig->unit));
            json_number(f, fig->value);
            if (fig->spread) {
                fputs(", \"p10\": ", f);
                json_number(f, fig->lo);
                fputs(", \"p90\": ", f);
                json_number(f, fig->hi);
            }
            fputc('}', f);
        }
        fputs("]}", f);
    }
    fputs(s->count ? "\n    ]}" : "]}", f);
}

void bench_write_json(const char *path, const bench_report *r)
{
    FILE *f = fopen(path, "w");
    if (!f)
        bench_die("cannot write %s: %s", path, strerror(errno));
    const bench_settings *s = r->settings;
    const bench_machine *m = &r->machine;
    fputs("{\n  \"kvshard_version\": ", f);
    json_string(f, kvshard_version());
    fputs(",\n  \"machine\": {\"cpu\": ", f);
    json_string(f, m->cpu);
    fprintf(f, ", \"cores\": %ld, \"kernel\": ", m->cores);
    json_string(f, m->kernel);
    fprintf(f,
            ", \"load_average_start\": [%.2f, %.2f, %.2f], "
            "\"load_average_end\": [%.2f, %.2f, %.2f], \"page_fault_ns_start\": %.0f, "
            "\"page_fault_ns_end\": %.0f},\n",
            m->load_start[0], m->load_start[1], m->load_start[2], m->load_end[0], m->load_end[1],
            m->load_end[2], m->fault_ns_start, m->fault_ns_end);
    fprintf(f,
            "  \"settings\": {\"quick\": %s, \"clock\": \"%s\", \"pairs\": %zu, "
            "\"big_pairs\": %zu, \"cli_pairs\": %zu, \"batch_ns\": %llu, \"cli\": ",
            s->quick ? "true" : "false", bench_clock_name(), s->pairs, s->big_pairs, s->cli_pairs,
            (unsigned long long)s->batch_ns);
    json_string(f, s->cli);
    fputs("},\n  \"sections\": [\n", f);
    for (size_t i = 0; i < r->section_count; i++) {
        json_section(f, &r->sections[i]);
        fputs(i + 1 < r->section_count ? ",\n" : "\n", f);
    }
    fputs("  ],\n  \"targets\": [", f);
    for (size_t i = 0; i < r->target_count; i++) {
        const bench_target *t = &r->targets[i];
        fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
        json_string(f, t->name);
        fputs(", \"value\": ", f);
        if (t->measured)
            json_number(f, t->value);
        else
            fputs("null", f);
        fputs(", \"limit\": ", f);
        json_number(f, t->limit);
        fprintf(f, ", \"comparison\": \"%s\", \"measured\": %s, \"pass\": %s, \"how\": ",
                t->at_least ? ">=" : "<=", t->measured ? "true" : "false",
                t->measured ? (t->pass ? "true" : "false") : "null");
        json_string(f, t->how);
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"all_pass\": %s,\n  \"seconds\": %.1f\n}\n",
            bench_all_pass(r) ? "true" : "false", r->seconds);
    if (fclose(f) != 0)
        bench_die("cannot write %s: %s", path, strerror(errno));
}
