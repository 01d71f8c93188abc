/* fb_json.h - one JSON Lines record at a time on stdout.
 *
 * A record is built in a growing buffer, then written with a single fwrite and flushed, so
 * a reader sees whole lines as they happen and a crash loses at most the record in flight.
 * Non-finite doubles are written as null (JSON has no NaN).
 */
#ifndef FB_JSON_H
#define FB_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct fb_json {
    char *buf;
    size_t len, cap;
    bool first; /* no member written yet in the current object */
    bool oom;   /* an allocation failed: the record is dropped, end() returns -1 */
};

/* Start a record {"type":TYPE ... Reuses the buffer of a previous record. */
void fb_json_begin(struct fb_json *j, const char *type);

void fb_json_str(struct fb_json *j, const char *key, const char *val);
void fb_json_int(struct fb_json *j, const char *key, long long val);
void fb_json_uint(struct fb_json *j, const char *key, unsigned long long val);
/* `decimals` digits after the point (%.Nf). */
void fb_json_double(struct fb_json *j, const char *key, double val, int decimals);
void fb_json_bool(struct fb_json *j, const char *key, bool val);
void fb_json_null(struct fb_json *j, const char *key);
void fb_json_str_array(struct fb_json *j, const char *key, const char *const *vals, size_t n);
void fb_json_double_array(struct fb_json *j, const char *key, const double *vals, size_t n,
                          int decimals);

/* Close the record, write it as one line to `out` and flush. 0 on success, -1 on failure. */
int fb_json_end(struct fb_json *j, FILE *out);

/* Release the buffer. */
void fb_json_free(struct fb_json *j);

#endif
