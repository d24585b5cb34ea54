// Long-poll load client for Lookout (Benchmarks/longpoll.sh drives it).
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
//   message; no ETag), a write is POST /pub/{id} with the same JSON body, and any 2xx
//   answer to a write counts as success (Nchan answers 201 or 202).
//
//   client hold --port P -n N --etag '"E-R"' (--same-id K | --ids-from OFF)
//               [--host 127.0.0.1] [--src 127.0.0.X] [--wait W] [--fields v]
//               [--timeout SECONDS] [--inflight 256] [--print-each]
//       Opens N connections (bound to --src before connect), sends on each
//       GET /v1/items/{id}?fields=F&wait=W with If-None-Match: E. Prints
//       "ready N T_NS" once every request is written, then reads the answers. With
//       --print-each, a line "resp ID STATUS T_NS" per complete answer (flushed once per
//       epoll batch). At the end (all answered, or --timeout seconds after "ready"):
//       "result n=N ok200=A s304=B other=C errors=D pending=E first_ns=F last_ns=L".
//       SIGUSR1 prints a "progress ..." line with the same counters at once.
//
//   client patch --port P --token T --ids LIST [--host] [--value-base V]
//       One keep-alive connection (warmed with one GET); for each id in LIST
//       ("1", "3,7", "100-119", mixed) sends PATCH /v1/items/{id} {"v":V+i} and reads
//       the answer. Prints "write ID STATUS T0_NS T1_NS" per write and
//       "summary n=.. ok=.. p50_us=.. p99_us=.. max_us=.. min_us=..".
//
//   client single --port P --token T [--rounds R] [--id 1] [--value-base V]
//       Two keep-alive connections, poll and write. Per round: GET items/ID?fields=v to
//       learn the ETag, send the long-poll with it, sleep 1 ms, t0, send the PATCH on the
//       other connection, read the poll's 200 (t1), then the PATCH's answer (t2).
//       Then R PATCHes with nothing held (write alone). Prints
//       "wake  n=.. p50_us=.. p99_us=.. max_us=.."  (t1 - t0)
//       "write_with_poll n=.. ..."                  (t2 - t0)
//       "write_alone n=.. ..."                      (PATCH round trip, nothing held)

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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
    const char *host, *src, *etag, *fields, *token, *ids;
    int port, n, wait, inflight, rounds, print_each, nchan;
    long same_id, ids_from, id, value_base;
    double timeout;
};

static void parse_options(int argc, char **argv, struct options *o) {
    *o = (struct options){.host = "127.0.0.1", .fields = "v", .wait = 60, .inflight = 256,
                          .rounds = 1000, .same_id = -1, .ids_from = -1, .id = 1,
                          .timeout = 120};
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
        else if (OPT("--rounds")) o->rounds = atoi(v);
        else if (OPT("--id")) o->id = atol(v);
        else if (OPT("--value-base")) o->value_base = atol(v);
        else if (strcmp(a, "--print-each") == 0) o->print_each = 1;
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

// Looks at buf[0..len): returns the total length of the first complete response
// (headers + body), 0 when more bytes are needed, -1 when it cannot be parsed.
static long response_length(const char *buf, size_t len, int *status) {
    const char *end = memmem(buf, len, "\r\n\r\n", 4);
    if (!end) return len > 65536 ? -1 : 0;
    size_t header_len = (size_t)(end - buf) + 4;
    if (len < 12 || memcmp(buf, "HTTP/1.", 7) != 0) return -1;
    int code = atoi(buf + 9);
    if (code < 100 || code > 599) return -1;
    *status = code;
    long body = 0;
    int chunked = 0;
    for (const char *line = memchr(buf, '\n', header_len); line && line < end;
         line = memchr(line, '\n', (size_t)(end - line))) {
        line++;
        if (strncasecmp(line, "Content-Length:", 15) == 0) body = strtol(line + 15, NULL, 10);
        else if (strncasecmp(line, "Transfer-Encoding:", 18) == 0) chunked = 1;
    }
    if (code == 304 || code == 204 || code < 200) body = 0;
    else if (chunked) return -1;  // Lookout always sends Content-Length
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
                etag[0] = 0;
                const char *end = memmem(r->buf, (size_t)total, "\r\n\r\n", 4);
                for (const char *line = memchr(r->buf, '\n', (size_t)total); line && line < end;
                     line = memchr(line, '\n', (size_t)(end - line))) {
                    line++;
                    if (strncasecmp(line, "ETag:", 5) == 0) {
                        const char *v = line + 5;
                        while (*v == ' ') v++;
                        size_t n = strcspn(v, "\r\n");
                        if (n >= etag_size) n = etag_size - 1;
                        memcpy(etag, v, n);
                        etag[n] = 0;
                    }
                }
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

// A held poll: Lookout's document view with the cursor, or an Nchan long-poll subscriber.
static int format_poll(char *req, size_t size, const struct options *o, long id, const char *etag) {
    if (o->nchan) return snprintf(req, size, "GET /sub/%ld HTTP/1.1\r\nHost: %s:%d\r\n\r\n", id, o->host, o->port);
    return snprintf(req, size,
                    "GET /v1/items/%ld?fields=%s&wait=%d HTTP/1.1\r\nHost: %s:%d\r\nIf-None-Match: %s\r\n\r\n",
                    id, o->fields, o->wait, o->host, o->port, etag);
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

// --- hold -------------------------------------------------------------------------

enum state { CONNECTING, SENT, DONE, FAILED };

struct conn {
    int fd;
    enum state state;
    long id;
    char *buf;
    size_t len, cap;
};

static volatile sig_atomic_t progress_requested;
static void on_usr1(int sig) {
    (void)sig;
    progress_requested = 1;
}

static int mode_hold(const struct options *o) {
    if (o->n <= 0) die("-n is required");
    if (!o->etag && !o->nchan) die("--etag is required");
    if ((o->same_id < 0) == (o->ids_from < 0)) die("give exactly one of --same-id and --ids-from");
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_usr1};
    sigaction(SIGUSR1, &sa, NULL);

    struct conn *conns = calloc((size_t)o->n, sizeof *conns);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (!conns || ep < 0) die("setup: %s", strerror(errno));
    int opened = 0, written = 0, settled = 0;  // settled: DONE or FAILED
    long ok200 = 0, s304 = 0, other = 0, errors = 0;
    uint64_t first = 0, last = 0, ready_at = 0;
    int errors_shown = 0;
    char req[1024];

#define FAIL(c, ...)                                                          \
    do {                                                                      \
        if (errors_shown++ < 5) {                                             \
            fprintf(stderr, "client hold: id %ld: ", (c)->id);                \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
        }                                                                     \
        if ((c)->state == CONNECTING) written++; /* will never be written */  \
        (c)->state = FAILED;                                                  \
        errors++;                                                             \
        settled++;                                                            \
        epoll_ctl(ep, EPOLL_CTL_DEL, (c)->fd, NULL);                          \
        close((c)->fd);                                                       \
        (c)->fd = -1;                                                         \
    } while (0)

    struct epoll_event events[1024];
    for (;;) {
        // Keep at most --inflight connections between connect() and a written request.
        while (opened < o->n && opened - written < o->inflight) {
            struct conn *c = &conns[opened];
            c->id = o->same_id >= 0 ? o->same_id : o->ids_from + opened;
            c->state = CONNECTING;
            c->fd = open_socket(o->host, o->port, o->src, 1);
            opened++;
            if (c->fd < 0) {
                c->fd = -1;
                if (errors_shown++ < 5) fprintf(stderr, "client hold: connect: %s\n", strerror(errno));
                c->state = FAILED;
                errors++;
                settled++;
                written++;
                continue;
            }
            struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN, .data.u32 = (uint32_t)(c - conns)};
            if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) die("epoll_ctl: %s", strerror(errno));
        }
        if (!ready_at && written == o->n) {
            ready_at = now_ns();
            printf("ready %d %" PRIu64 "\n", o->n - (int)errors, ready_at);
            fflush(stdout);
        }
        if (settled == o->n) break;
        if (progress_requested) {
            progress_requested = 0;
            printf("progress n=%d written=%d ok200=%ld s304=%ld other=%ld errors=%ld pending=%d\n", o->n,
                   written, ok200, s304, other, errors, o->n - settled);
            fflush(stdout);
        }
        int timeout_ms = 1000;
        if (ready_at) {
            double left = o->timeout - (double)(now_ns() - ready_at) / 1e9;
            if (left <= 0) break;
            if (left * 1000 < timeout_ms) timeout_ms = (int)(left * 1000) + 1;
        }
        int n = epoll_wait(ep, events, 1024, timeout_ms);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait: %s", strerror(errno));
        }
        for (int i = 0; i < n; i++) {
            struct conn *c = &conns[events[i].data.u32];
            if (c->state == DONE || c->state == FAILED) continue;
            if (c->state == CONNECTING) {
                if (events[i].events & (EPOLLERR | EPOLLHUP)) {
                    int err = 0;
                    socklen_t l = sizeof err;
                    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
                    FAIL(c, "connect: %s", strerror(err ? err : ECONNRESET));
                    continue;
                }
                if (!(events[i].events & EPOLLOUT)) continue;
                int len = format_poll(req, sizeof req, o, c->id, o->etag);
                if (len <= 0 || len >= (int)sizeof req) die("request too long");
                ssize_t w = write(c->fd, req, (size_t)len);
                if (w != len) {  // a fresh socket takes ~150 bytes at once
                    FAIL(c, "write: %s", w < 0 ? strerror(errno) : "short write");
                    continue;
                }
                c->state = SENT;
                written++;
                struct epoll_event ev = {.events = EPOLLIN, .data.u32 = events[i].data.u32};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                continue;
            }
            // SENT: read what is there.
            for (;;) {
                if (c->cap - c->len < 4096) {
                    c->cap = c->cap ? c->cap * 2 : 8192;
                    c->buf = realloc(c->buf, c->cap);
                    if (!c->buf) die("out of memory");
                }
                ssize_t got = read(c->fd, c->buf + c->len, c->cap - c->len - 1);
                if (got < 0 && errno == EINTR) continue;
                if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
                if (got <= 0) {
                    FAIL(c, "connection closed before a complete response (%s, %zu bytes read)",
                         got ? strerror(errno) : "EOF", c->len);
                    break;
                }
                c->len += (size_t)got;
                c->buf[c->len] = 0;
                int status = 0;
                long total = response_length(c->buf, c->len, &status);
                if (total < 0) {
                    FAIL(c, "unparseable response: %.120s", c->buf);
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
                    if (errors_shown++ < 5)
                        fprintf(stderr, "client hold: id %ld: status %d: %.300s\n", c->id, status, c->buf);
                }
                if (o->print_each) printf("resp %ld %d %" PRIu64 "\n", c->id, status, t);
                c->state = DONE;
                settled++;
                // Keep the connection open until the end: closing now would make the server
                // process FINs while it is still answering the others.
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                free(c->buf);
                c->buf = NULL;
                break;
            }
        }
        if (o->print_each && n > 0) fflush(stdout);
    }
    if (!ready_at) {
        printf("ready %d %" PRIu64 "\n", written - (int)errors, now_ns());
    }
    printf("result n=%d ok200=%ld s304=%ld other=%ld errors=%ld pending=%d first_ns=%" PRIu64
           " last_ns=%" PRIu64 "\n",
           o->n, ok200, s304, other, errors, o->n - settled, first, last);
    fflush(stdout);
    for (int i = 0; i < o->n; i++)
        if (conns[i].fd >= 0) close(conns[i].fd);
    return 0;
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
    struct timespec ts = {.tv_sec = 0, .tv_nsec = ns};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int mode_single(const struct options *o) {
    if (!o->token && !o->nchan) die("--token is required");
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
        len = format_poll(req, sizeof req, &held, o->id, etag);
        write_all(poll.fd, req, (size_t)len);
        sleep_ns(1000000);
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
        }
    }
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

int main(int argc, char **argv) {
    if (argc < 2) die("usage: client now|hold|patch|single [options] (see the top of client.c)");
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
    die("unknown mode '%s'", mode);
}
