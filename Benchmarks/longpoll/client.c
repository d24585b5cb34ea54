// Long-poll and EventSource load client for Lookout (Benchmarks/longpoll.sh and
// Benchmarks/compare.sh drive it).
//
// Build: cc -O2 -Wall -Wextra -o client client.c
//
// Modes (every result line on stdout is "key value" or "key=value" words, one record a line):
//
//   client now
//       Prints CLOCK_MONOTONIC in ns.
//
//   With --nchan (any mode but now) the same load goes to nginx's Nchan module instead:
//   a poll is GET /sub/{id} (a long-poll subscriber that waits for the channel's next
//   message; no ETag), a stream is GET /events/{id} (an EventSource subscriber), a write
//   is POST /pub/{id} with the same JSON body, and any 2xx answer to a write counts as
//   success (Nchan answers 201 or 202).
//
//   client hold --port P -n N --etag '"E-R"' (--same-id K | --ids-from OFF)
//               [--host 127.0.0.1] [--src 127.0.0.X] [--wait W] [--fields v]
//               [--timeout SECONDS] [--inflight 256] [--print-each] [--keep-open]
//       Opens N connections (bound to --src before connect), sends on each
//       GET /v1/items/{id}?fields=F&wait=W with If-None-Match: E. Prints
//       "ready N T_NS" once every request is written, then reads the answers. With
//       --print-each, a line "resp ID STATUS T_NS" per complete answer (flushed once per
//       epoll batch). At the end (all answered, or --timeout seconds after "ready"):
//       "result n=N ok200=A s304=B other=C errors=D pending=E first_ns=F last_ns=L".
//       SIGUSR1 prints a "progress ..." line with the same counters at once. With
//       --keep-open, the connections stay open after "result" until SIGUSR2 or SIGTERM:
//       a client that is done first then does not close its N connections while another
//       is still reading its answers (the server's closes would count in the other's time).
//
//   client streams --port P -n N (--same-id K | --ids-from OFF) [--expect V]
//                  [--host] [--src] [--fields v] [--timeout 120] [--linger 1] [--inflight]
//       Opens N EventSource streams: GET /v1/items/{id}?fields=F with
//       Accept: text/event-stream on a keep-alive HTTP/1.1 connection each (chunked or
//       close-delimited bodies; id:/data:/event: lines, blank-line framing; comments and
//       retry: ignored). Prints "ready N T_NS" once every stream has received its first
//       event (the current value), so that each is established and idle. With --expect,
//       every stream must then receive exactly one more event, whose data holds "v":V;
//       the run ends --linger seconds after the last stream has it (to catch any
//       duplicate), or --timeout seconds after "ready". Without --expect any further
//       event counts as extra and the run lasts --timeout seconds after "ready".
//       At the end: "result n=N initial=I right=R wrong=W missing=M extra=X failed=F
//       first_ns=.. last_ns=.." (first/last: the times the expected events were complete).
//       Exits 1 unless every stream got exactly its one right event (or, without
//       --expect, unless every stream got its first event and nothing more).
//
//   client patch --port P --token T --ids LIST [--host] [--value-base V]
//       One keep-alive connection (warmed with one GET); for each id in LIST
//       ("1", "3,7", "100-119", mixed) sends PATCH /v1/items/{id} {"v":V+i} and reads
//       the answer. Prints "write ID STATUS T0_NS T1_NS" per write and
//       "summary n=.. ok=.. p50_us=.. p99_us=.. max_us=.. min_us=..".
//
//   client single --port P --token T [--rounds R] [--id 1] [--value-base V] [--gap-us 1000]
//                 [--stamps FILE]
//       Two keep-alive connections, poll and write. Per round: GET items/ID?fields=v to
//       learn the ETag, send the long-poll with it, sleep --gap-us (an Nchan subscriber
//       whose poll arrives after the publish waits for the next message, so under a tracer
//       that slows the server, give it longer), t0, send the PATCH on the
//       other connection, read the poll's 200 (t1), then the PATCH's answer (t2).
//       Then R PATCHes with nothing held (write alone). Prints
//       "wake  n=.. p50_us=.. p99_us=.. max_us=.."  (t1 - t0)
//       "write_with_poll n=.. ..."                  (t2 - t0)
//       "write_alone n=.. ..."                      (PATCH round trip, nothing held)
//       --stamps FILE writes each measured round's t0 and t1 to FILE, "T0_NS T1_NS" in
//       nanoseconds of CLOCK_MONOTONIC, the clock of the server's wake trace, so that
//       wake-budget.sh can line them up with the server's stages.
//
//   client stream-single --port P --token T [--rounds R] [--id 1] [--value-base V]
//       Two keep-alive connections, stream and write. Writes {"v":V} to ID, opens the
//       stream on ID and checks that its first event shows V. Then per round (10 warm-up
//       rounds first): sleep 1 ms, t0, write {"v":V+i} on the other connection, read
//       the stream until its next event is complete (t1), then the write's answer. Each
//       round must bring exactly one event, with the value just written; 0.5 s after
//       the last round, no further event may have come. Prints
//       "event n=.. p50_us=.. p99_us=.. max_us=.. min_us=.."  (t1 - t0)
//       "events n=.. right=.. wrong=.. extra=.. bad_writes=.." and exits 1 unless all
//       were right.

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("client: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

// --- options ----------------------------------------------------------------------

struct options {
    const char *host, *src, *etag, *fields, *token, *ids, *stamps;
    int port, n, wait, inflight, rounds, print_each, nchan, gap_us, keep_open;
    long same_id, ids_from, id, value_base, expect;
    double timeout, linger;
};

static void parse_options(int argc, char **argv, struct options *o) {
    *o = (struct options){.host = "127.0.0.1", .fields = "v", .wait = 60, .inflight = 256,
                          .rounds = 1000, .gap_us = 1000, .same_id = -1, .ids_from = -1, .id = 1,
                          .expect = -1, .timeout = 120, .linger = 1};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (strcmp(a, name) == 0 && v && (i++, 1))
        if (OPT("--host")) o->host = v;
        else if (OPT("--src")) o->src = v;
        else if (OPT("--port")) o->port = atoi(v);
        else if (OPT("-n")) o->n = atoi(v);
        else if (OPT("--etag")) o->etag = v;
        else if (OPT("--same-id")) o->same_id = atol(v);
        else if (OPT("--ids-from")) o->ids_from = atol(v);
        else if (OPT("--wait")) o->wait = atoi(v);
        else if (OPT("--fields")) o->fields = v;
        else if (OPT("--timeout")) o->timeout = atof(v);
        else if (OPT("--inflight")) o->inflight = atoi(v);
        else if (OPT("--token")) o->token = v;
        else if (OPT("--ids")) o->ids = v;
        else if (OPT("--stamps")) o->stamps = v;
        else if (OPT("--rounds")) o->rounds = atoi(v);
        else if (OPT("--gap-us")) o->gap_us = atoi(v);
        else if (OPT("--id")) o->id = atol(v);
        else if (OPT("--value-base")) o->value_base = atol(v);
        else if (OPT("--expect")) o->expect = atol(v);
        else if (OPT("--linger")) o->linger = atof(v);
        else if (strcmp(a, "--print-each") == 0) o->print_each = 1;
        else if (strcmp(a, "--keep-open") == 0) o->keep_open = 1;
        else if (strcmp(a, "--nchan") == 0) o->nchan = 1;
        else die("unknown or incomplete option '%s'", a);
#undef OPT
    }
    if (o->port <= 0) die("--port is required");
}

// --- sockets ----------------------------------------------------------------------

static int open_socket(const char *host, int port, const char *src, int nonblocking) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (src) {
        struct sockaddr_in s = {.sin_family = AF_INET};
        if (inet_pton(AF_INET, src, &s.sin_addr) != 1) die("bad --src %s", src);
        // Let connect() pick the port, so the 4-tuple (not the port alone) must be unique.
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        if (bind(fd, (struct sockaddr *)&s, sizeof s) != 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
    }
    struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &d.sin_addr) != 1) die("bad --host %s", host);
    if (connect(fd, (struct sockaddr *)&d, sizeof d) != 0 && errno != EINPROGRESS) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

// --- HTTP response parsing --------------------------------------------------------

// The status code of a response head (buf[0..len)), or -1 when it is not one.
static int status_code(const char *buf, size_t len) {
    if (len < 12 || memcmp(buf, "HTTP/1.", 7) != 0) return -1;
    int code = atoi(buf + 9);
    return code < 100 || code > 599 ? -1 : code;
}

// The value of header field `name` (with its colon, e.g. "ETag:") in the head
// buf[0..head_len), leading spaces skipped, its length in *value_len; NULL when absent.
static const char *header_value(const char *buf, size_t head_len, const char *name, size_t *value_len) {
    size_t name_len = strlen(name);
    const char *end = buf + head_len;
    for (const char *line = memchr(buf, '\n', head_len); line && line < end;
         line = memchr(line, '\n', (size_t)(end - line))) {
        line++;
        if ((size_t)(end - line) < name_len || strncasecmp(line, name, name_len) != 0) continue;
        const char *v = line + name_len;
        while (v < end && *v == ' ') v++;
        const char *eol = v;
        while (eol < end && *eol != '\r' && *eol != '\n') eol++;
        *value_len = (size_t)(eol - v);
        return v;
    }
    return NULL;
}

// Looks at buf[0..len): returns the total length of the first complete response
// (headers + body), 0 when more bytes are needed, -1 when it cannot be parsed.
static long response_length(const char *buf, size_t len, int *status) {
    const char *end = memmem(buf, len, "\r\n\r\n", 4);
    if (!end) return len > 65536 ? -1 : 0;
    size_t header_len = (size_t)(end - buf) + 4;
    int code = status_code(buf, len);
    if (code < 0) return -1;
    *status = code;
    size_t n;
    const char *v = header_value(buf, header_len, "Content-Length:", &n);
    long body = v ? strtol(v, NULL, 10) : 0;
    if (code == 304 || code == 204 || code < 200) body = 0;
    else if (header_value(buf, header_len, "Transfer-Encoding:", &n)) return -1;  // Lookout always sends Content-Length
    if (body < 0) return -1;
    if (len < header_len + (size_t)body) return 0;
    return (long)(header_len + (size_t)body);
}

// Blocking: reads one complete response into buf (keeping any surplus for the next call).
struct reader {
    int fd;
    char buf[1 << 16];
    size_t len;
};

static int read_response(struct reader *r, int *status, char *etag, size_t etag_size) {
    for (;;) {
        long total = response_length(r->buf, r->len, status);
        if (total < 0) die("unparseable response: %.200s", r->buf);
        if (total > 0) {
            if (etag) {
                const char *end = memmem(r->buf, (size_t)total, "\r\n\r\n", 4);
                size_t n = 0;
                const char *v = header_value(r->buf, (size_t)(end - r->buf) + 2, "ETag:", &n);
                if (n >= etag_size) n = etag_size - 1;
                memcpy(etag, v ? v : "", n);
                etag[n] = 0;
            }
            memmove(r->buf, r->buf + total, r->len - (size_t)total);
            r->len -= (size_t)total;
            return 0;
        }
        if (r->len == sizeof r->buf) die("response too large");
        ssize_t got = read(r->fd, r->buf + r->len, sizeof r->buf - r->len);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) die("connection closed while reading a response (%s)", got ? strerror(errno) : "EOF");
        r->len += (size_t)got;
    }
}

static void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("write: %s", strerror(errno));
        p += w;
        n -= (size_t)w;
    }
}

static int blocking_connect(const struct options *o) {
    int fd = open_socket(o->host, o->port, o->src, 0);
    if (fd < 0) die("connect %s:%d: %s", o->host, o->port, strerror(errno));
    return fd;
}

// A held poll: Lookout's document view with the cursor (--etag), or an Nchan long-poll
// subscriber.
static int format_poll(char *req, size_t size, const struct options *o, long id) {
    if (o->nchan) return snprintf(req, size, "GET /sub/%ld HTTP/1.1\r\nHost: %s:%d\r\n\r\n", id, o->host, o->port);
    return snprintf(req, size,
                    "GET /v1/items/%ld?fields=%s&wait=%d HTTP/1.1\r\nHost: %s:%d\r\nIf-None-Match: %s\r\n\r\n",
                    id, o->fields, o->wait, o->host, o->port, o->etag);
}

// An EventSource stream: Lookout's document view, or an Nchan EventSource subscriber.
// No token: the items are public, and Nchan's subscribers check none either.
static int format_stream(char *req, size_t size, const struct options *o, long id) {
    if (o->nchan)
        return snprintf(req, size, "GET /events/%ld HTTP/1.1\r\nHost: %s:%d\r\nAccept: text/event-stream\r\n\r\n",
                        id, o->host, o->port);
    return snprintf(req, size,
                    "GET /v1/items/%ld?fields=%s HTTP/1.1\r\nHost: %s:%d\r\nAccept: text/event-stream\r\n\r\n",
                    id, o->fields, o->host, o->port);
}

static int write_ok(const struct options *o, int status) {
    return o->nchan ? status >= 200 && status < 300 : status == 200;
}

static int format_patch(char *req, size_t size, const struct options *o, long id, long value) {
    char body[64];
    int blen = snprintf(body, sizeof body, "{\"v\":%ld}", value);
    if (o->nchan)
        return snprintf(req, size,
                        "POST /pub/%ld HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                        "Content-Length: %d\r\n\r\n%s",
                        id, o->host, o->port, blen, body);
    return snprintf(req, size,
                    "PATCH /v1/items/%ld HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                    "Authorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s",
                    id, o->host, o->port, o->token, blen, body);
}

// --- statistics -------------------------------------------------------------------

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

// Nearest-rank percentile of sorted values.
static uint64_t pct(const uint64_t *v, size_t n, double p) {
    if (n == 0) return 0;
    size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    return v[rank - 1];
}

static void print_stats(const char *label, uint64_t *v, size_t n) {
    qsort(v, n, sizeof *v, cmp_u64);
    printf("%s n=%zu p50_us=%.1f p99_us=%.1f max_us=%.1f min_us=%.1f\n", label, n,
           pct(v, n, 50) / 1e3, pct(v, n, 99) / 1e3, n ? v[n - 1] / 1e3 : 0.0, n ? v[0] / 1e3 : 0.0);
}

// --- text/event-stream -------------------------------------------------------------

// A growable byte buffer.
struct text {
    char *p;
    size_t len, cap;
};

static void text_add(struct text *t, const char *p, size_t n) {
    if (t->len + n + 1 > t->cap) {
        while (t->len + n + 1 > t->cap) t->cap = t->cap ? t->cap * 2 : 256;
        t->p = realloc(t->p, t->cap);
        if (!t->p) die("out of memory");
    }
    memcpy(t->p + t->len, p, n);
    t->len += n;
    t->p[t->len] = 0;
}

// One dispatched event: its type ("message" unless an event: line named another), the
// last id: seen on the stream, and its data: lines joined with '\n'.
struct sse_event {
    const char *type, *id, *data;
};

typedef void (*sse_handler)(void *ctx, const struct sse_event *event);

// An EventSource answer read as it arrives: the head, then the body (chunked, or
// delimited by the connection's end), then the event stream's lines
// (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).
struct sse {
    int status;  // the answer's status; 0 until its head is complete
    int chunked;
    int ended;   // the last chunk has come
    enum { CHUNK_SIZE, CHUNK_DATA, CHUNK_CRLF } chunk;
    size_t chunk_left;
    char size_line[24];
    size_t size_len;
    struct text line;  // the head, then the line being read
    int after_cr;      // the last line ended with '\r': a '\n' next belongs to it
    struct text data;  // the event's data so far, each line with its '\n'
    char type[32], id[80];
};

static void copy_field(char *dst, size_t size, const char *v, size_t n) {
    if (n >= size) n = size - 1;
    memcpy(dst, v, n);
    dst[n] = 0;
}

// One complete line: a blank one dispatches the event; a comment and retry: are ignored.
static void sse_line(struct sse *s, sse_handler on_event, void *ctx) {
    const char *line = s->line.p ? s->line.p : "";
    size_t len = s->line.len;
    if (len == 0) {
        if (s->data.len > 0) {
            s->data.p[--s->data.len] = 0;  // the last data line's '\n'
            struct sse_event event = {.type = s->type[0] ? s->type : "message", .id = s->id, .data = s->data.p};
            on_event(ctx, &event);
        }
        s->data.len = 0;
        s->type[0] = 0;
        return;
    }
    if (line[0] == ':') return;
    const char *colon = memchr(line, ':', len);
    size_t name_len = colon ? (size_t)(colon - line) : len;
    const char *value = colon ? colon + 1 : line + len;
    if (value < line + len && *value == ' ') value++;
    size_t value_len = (size_t)(line + len - value);
#define FIELD_IS(name) (name_len == sizeof name - 1 && memcmp(line, name, name_len) == 0)
    if (FIELD_IS("data")) {
        text_add(&s->data, value, value_len);
        text_add(&s->data, "\n", 1);
    } else if (FIELD_IS("event")) {
        copy_field(s->type, sizeof s->type, value, value_len);
    } else if (FIELD_IS("id")) {
        copy_field(s->id, sizeof s->id, value, value_len);
    }
#undef FIELD_IS
}

// Splits decoded body bytes into lines ending in "\r\n", "\n" or "\r".
static void sse_lines(struct sse *s, const char *p, size_t n, sse_handler on_event, void *ctx) {
    while (n > 0) {
        if (s->after_cr && *p == '\n') {
            p++;
            n--;
        }
        s->after_cr = 0;
        size_t span = 0;
        while (span < n && p[span] != '\r' && p[span] != '\n') span++;
        text_add(&s->line, p, span);
        if (span == n) return;
        s->after_cr = p[span] == '\r';
        sse_line(s, on_event, ctx);
        s->line.len = 0;
        p += span + 1;
        n -= span + 1;
    }
}

// Takes the chunked framing off the body; returns -1 when it is broken.
static int sse_chunks(struct sse *s, const char *p, size_t n, sse_handler on_event, void *ctx) {
    while (n > 0 && !s->ended) {
        if (s->chunk == CHUNK_DATA) {
            size_t take = n < s->chunk_left ? n : s->chunk_left;
            sse_lines(s, p, take, on_event, ctx);
            p += take;
            n -= take;
            s->chunk_left -= take;
            if (s->chunk_left == 0) s->chunk = CHUNK_CRLF;
            continue;
        }
        char ch = *p++;
        n--;
        if (s->chunk == CHUNK_CRLF) {
            if (ch == '\n') s->chunk = CHUNK_SIZE;
            else if (ch != '\r') return -1;
        } else if (ch != '\n') {  // CHUNK_SIZE: hex digits, maybe ";extensions", then "\r\n"
            if (s->size_len == sizeof s->size_line - 1) return -1;
            s->size_line[s->size_len++] = ch;
        } else {
            s->size_line[s->size_len] = 0;
            char *end;
            unsigned long size = strtoul(s->size_line, &end, 16);
            if (end == s->size_line) return -1;
            s->size_len = 0;
            s->chunk_left = size;
            s->chunk = CHUNK_DATA;
            if (size == 0) s->ended = 1;
        }
    }
    return 0;
}

// Feeds the next n bytes of the answer; calls on_event for each complete event. Returns
// -1 when the bytes cannot be an HTTP answer. The caller checks s->status (an answer
// other than 200 is not a stream: its body is not parsed) and s->ended.
static int sse_feed(struct sse *s, const char *p, size_t n, sse_handler on_event, void *ctx) {
    if (!s->status) {
        size_t before = s->line.len;
        text_add(&s->line, p, n);
        const char *end = memmem(s->line.p, s->line.len, "\r\n\r\n", 4);
        if (!end) return s->line.len > 65536 ? -1 : 0;
        size_t head_len = (size_t)(end - s->line.p) + 4, value_len;
        s->status = status_code(s->line.p, head_len);
        if (s->status < 0) return -1;
        const char *te = header_value(s->line.p, head_len, "Transfer-Encoding:", &value_len);
        s->chunked = te && value_len >= 7 && strncasecmp(te + value_len - 7, "chunked", 7) == 0;
        s->line.len = 0;
        p += head_len - before;
        n -= head_len - before;
    }
    if (s->status != 200) return 0;
    if (s->chunked) return sse_chunks(s, p, n, on_event, ctx);
    sse_lines(s, p, n, on_event, ctx);
    return 0;
}

// The number after "v": in an event's data (the item's value), or -1.
static long event_value(const char *data) {
    const char *v = strstr(data, "\"v\":");
    return v ? strtol(v + 4, NULL, 10) : -1;
}

// --- many connections (hold, streams) ---------------------------------------------------

enum state { CONNECTING, SENT, DONE, FAILED };

struct conn {
    int fd;
    enum state state;
    long id;
    struct text answer;  // hold: the answer so far
    struct sse *sse;     // streams: the stream so far
    int events;          // streams: events received; the first is the current value
    long value;          // streams: the value in the second event
    int events_counted;  // streams: how many of them the tallies have seen
    int ended;           // streams: an event other than a message came (Lookout's "end")
};

// N non-blocking connections, each sending one request (`format`) once connected; at
// most --inflight between connect() and a written request.
struct fleet {
    const struct options *o;
    const char *mode;
    int (*format)(char *req, size_t size, const struct options *o, long id);
    struct conn *conns;
    int ep, opened, written, settled;  // settled: DONE or FAILED
    int failed_after[3];               // failures by events received before: 0, 1, 2 or more
    long errors;
    int errors_shown;
};

static void fleet_init(struct fleet *f, const struct options *o, const char *mode,
                       int (*format)(char *, size_t, const struct options *, long)) {
    if (o->n <= 0) die("-n is required");
    if ((o->same_id < 0) == (o->ids_from < 0)) die("give exactly one of --same-id and --ids-from");
    signal(SIGPIPE, SIG_IGN);
    *f = (struct fleet){.o = o, .mode = mode, .format = format};
    f->conns = calloc((size_t)o->n, sizeof *f->conns);
    f->ep = epoll_create1(EPOLL_CLOEXEC);
    if (!f->conns || f->ep < 0) die("setup: %s", strerror(errno));
}

__attribute__((format(printf, 3, 4))) static void fleet_fail(struct fleet *f, struct conn *c, const char *fmt, ...) {
    if (f->errors_shown++ < 5) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "client %s: id %ld: ", f->mode, c->id);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    if (c->state == CONNECTING) f->written++;  // will never be written
    c->state = FAILED;
    f->failed_after[c->events < 2 ? c->events : 2]++;
    f->errors++;
    f->settled++;
    if (c->fd >= 0) {
        epoll_ctl(f->ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
}

// Opens connections until --inflight of them wait to write their request.
static void fleet_open(struct fleet *f) {
    const struct options *o = f->o;
    while (f->opened < o->n && f->opened - f->written < o->inflight) {
        struct conn *c = &f->conns[f->opened];
        c->id = o->same_id >= 0 ? o->same_id : o->ids_from + f->opened;
        c->state = CONNECTING;
        c->fd = open_socket(o->host, o->port, o->src, 1);
        f->opened++;
        if (c->fd < 0) {
            fleet_fail(f, c, "connect: %s", strerror(errno));
            continue;
        }
        struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN, .data.u32 = (uint32_t)(c - f->conns)};
        if (epoll_ctl(f->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) die("epoll_ctl: %s", strerror(errno));
    }
}

// Handles an event on a connection still connecting (sends its request once writable);
// returns 0 when the connection was past that, for the mode to read.
static int fleet_connecting(struct fleet *f, struct conn *c, uint32_t events) {
    if (c->state != CONNECTING) return 0;
    if (events & (EPOLLERR | EPOLLHUP)) {
        int err = 0;
        socklen_t l = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
        fleet_fail(f, c, "connect: %s", strerror(err ? err : ECONNRESET));
        return 1;
    }
    if (!(events & EPOLLOUT)) return 1;
    char req[1024];
    int len = f->format(req, sizeof req, f->o, c->id);
    if (len <= 0 || len >= (int)sizeof req) die("request too long");
    ssize_t w = write(c->fd, req, (size_t)len);
    if (w != len) {  // a fresh socket takes ~150 bytes at once
        fleet_fail(f, c, "write: %s", w < 0 ? strerror(errno) : "short write");
        return 1;
    }
    c->state = SENT;
    f->written++;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)(c - f->conns)};
    epoll_ctl(f->ep, EPOLL_CTL_MOD, c->fd, &ev);
    return 1;
}

// Waits for events until `deadline` (CLOCK_MONOTONIC ns, 0: none; at most 1 s at a
// time); returns their count, 0 on a signal or after a second, -1 once past the deadline.
static int fleet_wait(struct fleet *f, struct epoll_event *events, int max, uint64_t deadline) {
    int timeout_ms = 1000;
    if (deadline) {
        uint64_t now = now_ns();
        if (now >= deadline) return -1;
        if ((deadline - now) / 1000000 < (uint64_t)timeout_ms) timeout_ms = (int)((deadline - now) / 1000000) + 1;
    }
    int n = epoll_wait(f->ep, events, max, timeout_ms);
    if (n < 0 && errno != EINTR) die("epoll_wait: %s", strerror(errno));
    return n < 0 ? 0 : n;
}

static void fleet_close(struct fleet *f) {
    for (int i = 0; i < f->opened; i++)
        if (f->conns[i].fd >= 0) close(f->conns[i].fd);
    close(f->ep);
}

// Reads what a non-blocking socket has: > 0 bytes, 0 at EOF, -1 with errno (EAGAIN: none yet).
static ssize_t read_some(int fd, char *p, size_t n) {
    for (;;) {
        ssize_t got = read(fd, p, n);
        if (got >= 0 || errno != EINTR) return got;
    }
}

// --- hold -------------------------------------------------------------------------

static volatile sig_atomic_t progress_requested;
static void on_usr1(int sig) {
    (void)sig;
    progress_requested = 1;
}

static int mode_hold(const struct options *o) {
    if (!o->etag && !o->nchan) die("--etag is required");
    struct fleet f;
    fleet_init(&f, o, "hold", format_poll);
    struct sigaction sa = {.sa_handler = on_usr1};
    sigaction(SIGUSR1, &sa, NULL);
    // --keep-open: SIGUSR2 is blocked from the start, so that one sent early is not missed;
    // SIGTERM keeps its default and ends the client at once, as without the option.
    sigset_t done_signal;
    sigemptyset(&done_signal);
    sigaddset(&done_signal, SIGUSR2);
    if (o->keep_open) sigprocmask(SIG_BLOCK, &done_signal, NULL);
    long ok200 = 0, s304 = 0, other = 0;
    uint64_t first = 0, last = 0, ready_at = 0;
    char chunk[16384];

    struct epoll_event events[1024];
    for (;;) {
        fleet_open(&f);
        if (!ready_at && f.written == o->n) {
            ready_at = now_ns();
            printf("ready %d %" PRIu64 "\n", o->n - (int)f.errors, ready_at);
            fflush(stdout);
        }
        if (f.settled == o->n) break;
        if (progress_requested) {
            progress_requested = 0;
            printf("progress n=%d written=%d ok200=%ld s304=%ld other=%ld errors=%ld pending=%d\n", o->n,
                   f.written, ok200, s304, other, f.errors, o->n - f.settled);
            fflush(stdout);
        }
        int n = fleet_wait(&f, events, 1024, ready_at ? ready_at + (uint64_t)(o->timeout * 1e9) : 0);
        if (n < 0) break;
        for (int i = 0; i < n; i++) {
            struct conn *c = &f.conns[events[i].data.u32];
            if (c->state == DONE || c->state == FAILED) continue;
            if (fleet_connecting(&f, c, events[i].events)) continue;
            // SENT: read what is there.
            for (;;) {
                ssize_t got = read_some(c->fd, chunk, sizeof chunk);
                if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
                if (got <= 0) {
                    fleet_fail(&f, c, "connection closed before a complete response (%s, %zu bytes read)",
                               got ? strerror(errno) : "EOF", c->answer.len);
                    break;
                }
                text_add(&c->answer, chunk, (size_t)got);
                int status = 0;
                long total = response_length(c->answer.p, c->answer.len, &status);
                if (total < 0) {
                    fleet_fail(&f, c, "unparseable response: %.120s", c->answer.p);
                    break;
                }
                if (total == 0) continue;
                uint64_t t = now_ns();
                if (!first || t < first) first = t;
                if (t > last) last = t;
                if (status == 200) ok200++;
                else if (status == 304) s304++;
                else {
                    other++;
                    if (f.errors_shown++ < 5)
                        fprintf(stderr, "client hold: id %ld: status %d: %.300s\n", c->id, status, c->answer.p);
                }
                if (o->print_each) printf("resp %ld %d %" PRIu64 "\n", c->id, status, t);
                c->state = DONE;
                f.settled++;
                // Keep the connection open until the end: closing now would make the server
                // process FINs while it is still answering the others.
                epoll_ctl(f.ep, EPOLL_CTL_DEL, c->fd, NULL);
                free(c->answer.p);
                c->answer = (struct text){0};
                break;
            }
        }
        if (o->print_each && n > 0) fflush(stdout);
    }
    if (!ready_at) {
        printf("ready %d %" PRIu64 "\n", f.written - (int)f.errors, now_ns());
    }
    printf("result n=%d ok200=%ld s304=%ld other=%ld errors=%ld pending=%d first_ns=%" PRIu64
           " last_ns=%" PRIu64 "\n",
           o->n, ok200, s304, other, f.errors, o->n - f.settled, first, last);
    fflush(stdout);
    if (o->keep_open) {
        int signal_number;
        sigwait(&done_signal, &signal_number);
    }
    fleet_close(&f);
    return 0;
}

// --- streams ----------------------------------------------------------------------

static int end_events_shown;

static void on_stream_event(void *ctx, const struct sse_event *event) {
    struct conn *c = ctx;
    if (strcmp(event->type, "message") != 0) {  // Lookout's "end", or anything unexpected
        if (end_events_shown++ < 5)
            fprintf(stderr, "client streams: id %ld: event '%s': %.200s\n", c->id, event->type, event->data);
        c->ended = 1;
        return;
    }
    if (++c->events == 2) c->value = event_value(event->data);
}

static int mode_streams(const struct options *o) {
    struct fleet f;
    fleet_init(&f, o, "streams", format_stream);
    int expecting = o->expect >= 0;
    int initial = 0, expected = 0, right = 0, wrong = 0;  // expected: streams with their second event
    uint64_t first = 0, last = 0, ready_at = 0, all_at = 0;
    char chunk[16384];

    struct epoll_event events[1024];
    for (;;) {
        fleet_open(&f);
        if (!ready_at && initial + f.failed_after[0] == o->n) {
            ready_at = now_ns();
            printf("ready %d %" PRIu64 "\n", initial, ready_at);
            fflush(stdout);
        }
        if (expecting && ready_at && !all_at && expected + f.failed_after[0] + f.failed_after[1] == o->n)
            all_at = now_ns();
        uint64_t deadline = all_at ? all_at + (uint64_t)(o->linger * 1e9)
                            : ready_at ? ready_at + (uint64_t)(o->timeout * 1e9) : 0;
        int n = fleet_wait(&f, events, 1024, deadline);
        if (n < 0) break;
        for (int i = 0; i < n; i++) {
            struct conn *c = &f.conns[events[i].data.u32];
            if (c->state == FAILED) continue;
            if (fleet_connecting(&f, c, events[i].events)) continue;
            if (!c->sse && !(c->sse = calloc(1, sizeof *c->sse))) die("out of memory");
            for (;;) {
                ssize_t got = read_some(c->fd, chunk, sizeof chunk - 1);
                if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
                if (got <= 0) {
                    fleet_fail(&f, c, "stream closed (%s) after %d events", got ? strerror(errno) : "EOF", c->events);
                    break;
                }
                uint64_t t = now_ns();
                chunk[got] = 0;  // for the messages below
                if (sse_feed(c->sse, chunk, (size_t)got, on_stream_event, c) != 0) {
                    fleet_fail(&f, c, "not an HTTP answer: %.120s", chunk);
                    break;
                }
                if (c->sse->status && c->sse->status != 200) {
                    fleet_fail(&f, c, "status %d: %.300s", c->sse->status, chunk);
                    break;
                }
                if (c->ended || c->sse->ended) {
                    fleet_fail(&f, c, "the stream ended after %d events", c->events);
                    break;
                }
                if (c->events_counted < 1 && c->events >= 1) initial++;
                if (c->events_counted < 2 && c->events >= 2) {
                    expected++;
                    if (!first || t < first) first = t;
                    if (t > last) last = t;
                    if (c->value == o->expect) right++;
                    else if (wrong++ < 5)
                        fprintf(stderr, "client streams: id %ld: event with v=%ld, expected %ld\n", c->id, c->value,
                                o->expect);
                }
                c->events_counted = c->events;
            }
        }
    }
    if (!ready_at) printf("ready %d %" PRIu64 "\n", initial, now_ns());
    // Extra: any event past the one expected (or, without --expect, past the first).
    long extra = 0;
    int allowed = expecting ? 2 : 1;
    for (int i = 0; i < o->n; i++)
        if (f.conns[i].events > allowed) extra += f.conns[i].events - allowed;
    int missing = expecting ? o->n - expected - f.failed_after[0] - f.failed_after[1] : 0;
    printf("result n=%d initial=%d right=%d wrong=%d missing=%d extra=%ld failed=%d first_ns=%" PRIu64
           " last_ns=%" PRIu64 "\n",
           o->n, initial, right, wrong, missing, extra, f.settled, first, last);
    fflush(stdout);
    fleet_close(&f);
    int ok = f.settled == 0 && extra == 0 && (expecting ? right == o->n : initial == o->n);
    return ok ? 0 : 1;
}

// --- patch ------------------------------------------------------------------------

static long *parse_ids(const char *list, size_t *count) {
    size_t cap = 16, n = 0;
    long *ids = malloc(cap * sizeof *ids);
    char *copy = strdup(list), *save = NULL;
    for (char *part = strtok_r(copy, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
        long a = atol(part), b = a;
        char *dash = strchr(part, '-');
        if (dash) b = atol(dash + 1);
        for (long id = a; id <= b; id++) {
            if (n == cap) ids = realloc(ids, (cap *= 2) * sizeof *ids);
            ids[n++] = id;
        }
    }
    free(copy);
    *count = n;
    return ids;
}

static int mode_patch(const struct options *o) {
    if ((!o->token && !o->nchan) || !o->ids) die("--token and --ids are required");
    size_t n;
    long *ids = parse_ids(o->ids, &n);
    if (n == 0) die("--ids names no id");
    static struct reader r;
    r.fd = blocking_connect(o);
    char req[2048];
    int status, len;
    // Warm the connection: a read on Lookout, a publish to a channel nobody reads on Nchan.
    if (o->nchan) len = format_patch(req, sizeof req, o, 999999999, 0);
    else
        len = snprintf(req, sizeof req, "GET /v1/items/%ld?fields=v HTTP/1.1\r\nHost: %s:%d\r\n\r\n", ids[0],
                       o->host, o->port);
    write_all(r.fd, req, (size_t)len);
    read_response(&r, &status, NULL, 0);
    uint64_t *lat = calloc(n, sizeof *lat);
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        len = format_patch(req, sizeof req, o, ids[i], o->value_base + (long)i);
        uint64_t t0 = now_ns();
        write_all(r.fd, req, (size_t)len);
        read_response(&r, &status, NULL, 0);
        uint64_t t1 = now_ns();
        lat[i] = t1 - t0;
        ok += write_ok(o, status);
        printf("write %ld %d %" PRIu64 " %" PRIu64 "\n", ids[i], status, t0, t1);
    }
    printf("ok %zu\n", ok);
    print_stats("summary", lat, n);
    close(r.fd);
    return ok == n ? 0 : 1;
}

// --- single -----------------------------------------------------------------------

static void sleep_ns(long ns) {
    struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int mode_single(const struct options *o) {
    if (!o->token && !o->nchan) die("--token is required");
    if (o->gap_us < 0 || o->gap_us > 10000000) die("--gap-us must be 0 to 10000000");
    int rounds = o->rounds;
    static struct reader poll, writer;
    poll.fd = blocking_connect(o);
    writer.fd = blocking_connect(o);
    uint64_t *wake = calloc((size_t)rounds, sizeof *wake);
    uint64_t *with_poll = calloc((size_t)rounds, sizeof *with_poll);
    uint64_t *alone = calloc((size_t)rounds, sizeof *alone);
    char req[2048], etag[256];
    int status, len;
    long value = o->value_base;
    int bad = 0;
    FILE *stamps = NULL;
    if (o->stamps && !(stamps = fopen(o->stamps, "w"))) die("cannot write %s: %s", o->stamps, strerror(errno));
    for (int i = -10; i < rounds; i++) {  // 10 warm-up rounds
        if (!o->nchan) {  // learn the cursor; an Nchan subscriber waits for the next message anyway
            len = snprintf(req, sizeof req, "GET /v1/items/%ld?fields=v HTTP/1.1\r\nHost: %s:%d\r\n\r\n",
                           o->id, o->host, o->port);
            write_all(poll.fd, req, (size_t)len);
            read_response(&poll, &status, etag, sizeof etag);
            if (status != 200 || !etag[0]) die("GET items/%ld: status %d, etag '%s'", o->id, status, etag);
        }
        struct options held = *o;
        held.wait = 30;
        held.fields = "v";
        held.etag = etag;
        len = format_poll(req, sizeof req, &held, o->id);
        write_all(poll.fd, req, (size_t)len);
        sleep_ns((long)o->gap_us * 1000);
        len = format_patch(req, sizeof req, o, o->id, ++value);
        uint64_t t0 = now_ns();
        write_all(writer.fd, req, (size_t)len);
        read_response(&poll, &status, NULL, 0);
        uint64_t t1 = now_ns();
        if (status != 200) bad++;
        int wstatus;
        read_response(&writer, &wstatus, NULL, 0);
        uint64_t t2 = now_ns();
        if (!write_ok(o, wstatus)) bad++;
        if (i >= 0) {
            wake[i] = t1 - t0;
            with_poll[i] = t2 - t0;
            if (stamps) fprintf(stamps, "%" PRIu64 " %" PRIu64 "\n", t0, t1);
        }
    }
    if (stamps && fclose(stamps) != 0) die("cannot write %s: %s", o->stamps, strerror(errno));
    for (int i = -10; i < rounds; i++) {
        len = format_patch(req, sizeof req, o, o->id, ++value);
        uint64_t t0 = now_ns();
        write_all(writer.fd, req, (size_t)len);
        read_response(&writer, &status, NULL, 0);
        uint64_t t1 = now_ns();
        if (!write_ok(o, status)) bad++;
        if (i >= 0) alone[i] = t1 - t0;
    }
    print_stats("wake", wake, (size_t)rounds);
    print_stats("write_with_poll", with_poll, (size_t)rounds);
    print_stats("write_alone", alone, (size_t)rounds);
    printf("bad %d\n", bad);
    return bad ? 1 : 0;
}

// --- stream-single ----------------------------------------------------------------

// A blocking EventSource stream and what it has received.
struct stream {
    int fd;
    struct sse sse;
    int events;
    long value;     // in the latest event
    char end[240];  // the data of an event other than a message
};

static void on_single_event(void *ctx, const struct sse_event *event) {
    struct stream *s = ctx;
    if (strcmp(event->type, "message") != 0) {
        snprintf(s->end, sizeof s->end, "event '%s': %s", event->type, event->data);
        return;
    }
    s->events++;
    s->value = event_value(event->data);
}

// Reads until the stream has more than `seen` events; returns -1 when none came within
// timeout_ms. Dies when the stream fails or ends.
static int await_event(struct stream *s, int seen, int timeout_ms) {
    uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000;
    char buf[16384];
    while (s->events <= seen) {
        uint64_t now = now_ns();
        if (now >= deadline) return -1;
        struct pollfd pfd = {.fd = s->fd, .events = POLLIN};
        int r = poll(&pfd, 1, (int)((deadline - now) / 1000000) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) die("poll: %s", strerror(errno));
        if (r == 0) continue;
        ssize_t got = read_some(s->fd, buf, sizeof buf - 1);
        if (got <= 0) die("the stream closed (%s) after %d events", got ? strerror(errno) : "EOF", s->events);
        buf[got] = 0;  // for the messages below
        if (sse_feed(&s->sse, buf, (size_t)got, on_single_event, s) != 0) die("not an HTTP answer: %.200s", buf);
        if (s->sse.status && s->sse.status != 200) die("the stream was answered %d: %.300s", s->sse.status, buf);
        if (s->end[0]) die("the stream ended after %d events: %s", s->events, s->end);
        if (s->sse.ended) die("the stream ended after %d events", s->events);
    }
    return 0;
}

static int mode_stream_single(const struct options *o) {
    if (!o->token && !o->nchan) die("--token is required");
    int rounds = o->rounds;
    static struct reader writer;
    static struct stream stream;
    char req[2048];
    int status, len;
    long value = o->value_base;
    writer.fd = blocking_connect(o);
    // The value the stream's first event must show (and, for Nchan, the message it sends first).
    len = format_patch(req, sizeof req, o, o->id, value);
    write_all(writer.fd, req, (size_t)len);
    read_response(&writer, &status, NULL, 0);
    if (!write_ok(o, status)) die("the first write answered %d", status);
    stream.fd = blocking_connect(o);
    len = format_stream(req, sizeof req, o, o->id);
    write_all(stream.fd, req, (size_t)len);
    if (await_event(&stream, 0, 10000) != 0) die("no first event within 10 s");
    if (stream.value != value) die("the first event shows v=%ld, not the current %ld", stream.value, value);

    uint64_t *lat = calloc((size_t)rounds, sizeof *lat);
    int right = 0, wrong = 0, bad_writes = 0;
    for (int i = -10; i < rounds; i++) {  // 10 warm-up rounds
        sleep_ns(1000000);
        int seen = stream.events;
        len = format_patch(req, sizeof req, o, o->id, ++value);
        uint64_t t0 = now_ns();
        write_all(writer.fd, req, (size_t)len);
        if (await_event(&stream, seen, 10000) != 0) die("no event within 10 s of writing v=%ld", value);
        uint64_t t1 = now_ns();
        read_response(&writer, &status, NULL, 0);
        if (!write_ok(o, status)) bad_writes++;
        if (stream.events == seen + 1 && stream.value == value) right++;
        else if (wrong++ < 5)
            fprintf(stderr, "client stream-single: wrote v=%ld, got %d events, the last with v=%ld\n", value,
                    stream.events - seen, stream.value);
        if (i >= 0) lat[i] = t1 - t0;
    }
    int seen = stream.events;
    await_event(&stream, seen, 500);  // anything more is extra
    int extra = stream.events - seen;
    print_stats("event", lat, (size_t)rounds);
    printf("events n=%d right=%d wrong=%d extra=%d bad_writes=%d\n", rounds + 10, right, wrong, extra, bad_writes);
    close(stream.fd);
    close(writer.fd);
    return wrong || extra || bad_writes ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 2) die("usage: client now|hold|streams|patch|single|stream-single [options] (see the top of client.c)");
    const char *mode = argv[1];
    if (strcmp(mode, "now") == 0) {
        printf("%" PRIu64 "\n", now_ns());
        return 0;
    }
    struct options o;
    parse_options(argc, argv, &o);
    if (strcmp(mode, "hold") == 0) return mode_hold(&o);
    if (strcmp(mode, "patch") == 0) return mode_patch(&o);
    if (strcmp(mode, "single") == 0) return mode_single(&o);
    if (strcmp(mode, "streams") == 0) return mode_streams(&o);
    if (strcmp(mode, "stream-single") == 0) return mode_stream_single(&o);
    die("unknown mode '%s'", mode);
}
