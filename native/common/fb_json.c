#include "fb_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void reserve(struct fb_json *j, size_t extra)
{
    if (j->oom || j->len + extra + 1 <= j->cap)
        return;
    size_t cap = j->cap ? j->cap : 1024;
    while (cap < j->len + extra + 1)
        cap *= 2;
    char *nb = realloc(j->buf, cap);
    if (!nb) {
        j->oom = true;
        return;
    }
    j->buf = nb;
    j->cap = cap;
}

static void put(struct fb_json *j, const char *s, size_t n)
{
    reserve(j, n);
    if (j->oom)
        return;
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void putf(struct fb_json *j, const char *fmt, ...)
{
    char tmp[384]; /* room for %.Nf of any double */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        j->oom = true;
        return;
    }
    put(j, tmp, (size_t)n);
}

static void put_string(struct fb_json *j, const char *s)
{
    put(j, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': put(j, "\\\"", 2); break;
        case '\\': put(j, "\\\\", 2); break;
        case '\n': put(j, "\\n", 2); break;
        case '\r': put(j, "\\r", 2); break;
        case '\t': put(j, "\\t", 2); break;
        default:
            if (*p < 0x20)
                putf(j, "\\u%04x", *p);
            else
                put(j, (const char *)p, 1);
        }
    }
    put(j, "\"", 1);
}

static void key(struct fb_json *j, const char *k)
{
    if (!j->first)
        put(j, ",", 1);
    j->first = false;
    put_string(j, k);
    put(j, ":", 1);
}

static void put_double(struct fb_json *j, double v, int decimals)
{
    if (!isfinite(v))
        put(j, "null", 4);
    else
        putf(j, "%.*f", decimals, v);
}

void fb_json_begin(struct fb_json *j, const char *type)
{
    j->len = 0;
    j->oom = false;
    j->first = true;
    put(j, "{", 1);
    fb_json_str(j, "type", type);
}

void fb_json_str(struct fb_json *j, const char *k, const char *val)
{
    key(j, k);
    put_string(j, val);
}

void fb_json_int(struct fb_json *j, const char *k, long long val)
{
    key(j, k);
    putf(j, "%lld", val);
}

void fb_json_uint(struct fb_json *j, const char *k, unsigned long long val)
{
    key(j, k);
    putf(j, "%llu", val);
}

void fb_json_double(struct fb_json *j, const char *k, double val, int decimals)
{
    key(j, k);
    put_double(j, val, decimals);
}

void fb_json_bool(struct fb_json *j, const char *k, bool val)
{
    key(j, k);
    put(j, val ? "true" : "false", val ? 4 : 5);
}

void fb_json_null(struct fb_json *j, const char *k)
{
    key(j, k);
    put(j, "null", 4);
}

void fb_json_str_array(struct fb_json *j, const char *k, const char *const *vals, size_t n)
{
    key(j, k);
    put(j, "[", 1);
    for (size_t i = 0; i < n; i++) {
        if (i)
            put(j, ",", 1);
        put_string(j, vals[i]);
    }
    put(j, "]", 1);
}

void fb_json_double_array(struct fb_json *j, const char *k, const double *vals, size_t n,
                          int decimals)
{
    key(j, k);
    put(j, "[", 1);
    for (size_t i = 0; i < n; i++) {
        if (i)
            put(j, ",", 1);
        put_double(j, vals[i], decimals);
    }
    put(j, "]", 1);
}

int fb_json_end(struct fb_json *j, FILE *out)
{
    put(j, "}\n", 2);
    if (j->oom) {
        fprintf(stderr, "fabench: out of memory building a JSON record\n");
        return -1;
    }
    if (fwrite(j->buf, 1, j->len, out) != j->len || fflush(out) != 0)
        return -1;
    return 0;
}

void fb_json_free(struct fb_json *j)
{
    free(j->buf);
    j->buf = NULL;
    j->len = j->cap = 0;
}
