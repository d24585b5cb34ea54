// CMicroHTTPD: Lookout's HTTP server, a thin layer over libmicrohttpd 0.9.75.
//
// Why this exists: Swift cannot call C variadic functions (MHD_start_daemon,
// MHD_get_connection_info, ...), and libmicrohttpd's access-handler protocol (a first
// call, one call per body chunk, a final call) is easier to get right once, in C. This
// header is the contract: Swift sees one callback per complete request and a handful of
// non-variadic calls to answer, suspend and resume it. It is the only code in Lookout
// that includes <microhttpd.h>.
//
// Threading: the handler runs on one of the daemon's threads and must not block.
// A request is answered exactly once, either inside the handler (lk_mhd_respond) or,
// after lk_mhd_suspend, from any thread (lk_mhd_respond resumes the connection).

#ifndef LK_MHD_H
#define LK_MHD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A running daemon bound to one address.
typedef struct lk_mhd_server lk_mhd_server;

/// One HTTP request, from its first header to the end of its response.
///
/// Valid from the handler call until the request completes (its response was sent or
/// the connection failed). Swift must not use it after answering it.
typedef struct lk_mhd_request lk_mhd_request;

/// Called once per complete request (headers and the whole body read), on a daemon thread.
/// A request the guard refused (lk_mhd_request_fault) is handed over too, to be answered
/// with its fault. The handler must call lk_mhd_respond or lk_mhd_suspend before
/// returning; if it does neither, the request is answered 500.
typedef void (*lk_mhd_handler)(void *context, lk_mhd_request *request);

/// A count of answers being made on threads that are not event loops: +1 when a request is
/// handed to one (a write queued for the writer thread's commit), -1 once it was answered
/// and the work it brings (the polls its commit woke) was posted. Any thread; servers given
/// it (lk_mhd_config.awaited) stay awake while it is above 0, as waking a sleeping thread
/// costs 30-80 us on a virtual machine.
typedef struct lk_mhd_awaited lk_mhd_awaited;
/// A count of 0; NULL when out of memory. Free it after every server given it has stopped.
lk_mhd_awaited *lk_mhd_awaited_create(void);
void lk_mhd_awaited_add(lk_mhd_awaited *awaited, int delta);
int lk_mhd_awaited_count(const lk_mhd_awaited *awaited);
void lk_mhd_awaited_free(lk_mhd_awaited *awaited);

/// How a daemon listens and what it accepts.
typedef struct lk_mhd_config {
    /// Numeric address to bind: "127.0.0.1", "::1", "0.0.0.0", or "::" (dual stack, IPv4 too).
    const char *bind_address;
    /// TCP port; 0 picks a free one (read it back with lk_mhd_port).
    uint16_t port;
    /// Event-loop threads, each accepting from the shared listening socket; 0 means 1.
    unsigned int thread_count;
    /// Most libmicrohttpd daemons per thread, among which its connections are spread (a
    /// resume walks the suspended connections of one daemon); a thread starts with 8 and
    /// one more for each 32 connections it holds. 0, or more than 256, means 256.
    unsigned int daemons_per_thread;
    /// Most connections open at once; the rest wait in the kernel's accept queue.
    unsigned int connection_limit;
    /// Most connections open at once from one client address; 0 means no limit.
    unsigned int per_ip_connection_limit;
    /// Seconds a connection may sit idle (not suspended) before it is closed; 0 = never.
    unsigned int idle_timeout_seconds;
    /// Largest request head (request line, header fields, and the empty line), in bytes;
    /// larger ones are answered 431 (414 for the request line alone). It sizes
    /// libmicrohttpd's per-connection memory unless `request_headers` lists the fields read; 0 means 16384.
    size_t max_head_bytes;
    /// Largest request body accepted; larger ones are answered 413.
    size_t max_body_bytes;
    /// The request header fields the handler reads, lowercase, each ended by NUL, the list
    /// ended by an empty name ("authorization\0content-type\0\0"); NULL: all of them.
    /// libmicrohttpd is given only these (and the framing fields), so its per-connection
    /// memory, resident for as long as a connection lives, can be small: with a list, the
    /// fields given must fit in LK_MHD_KEPT_HEAD_BYTES (else 431).
    const char *request_headers;
    /// Seconds a request's head may take to arrive from its first byte, and its body's
    /// grace before it must average 1 KiB/s; 0 means 20.
    unsigned int request_timeout_seconds;
    /// Microseconds a thread with nothing to do keeps polling its events before it sleeps,
    /// when its last wait lasted at most four times this (a client sending request after
    /// request): a sleeping thread's next event costs it a wake-up, 30-80 us on a virtual
    /// machine. 0: never; more than LK_MHD_MAX_SPIN_MICROSECONDS means that.
    unsigned int spin_microseconds;
    /// 0: a thread whose polling lost its CPU for over 500 us (CPU-bound work shares the
    /// CPUs) stops polling for 100 ms (lk_server.h, LK_CONTENDED_PASS_US); else it keeps
    /// polling.
    int keep_polling_when_contended;
    /// Answers awaited from threads that are not event loops (lk_mhd_awaited), or NULL. While
    /// its count is above 0, a thread holding suspended requests polls its events for up to
    /// LK_AWAIT_SPIN_FACTOR spins before it sleeps (none with a spin of 0), so that the
    /// resumes those answers bring find it awake.
    const lk_mhd_awaited *awaited;
    /// Called for each complete request with `context`.
    lk_mhd_handler handler;
    void *context;
    /// Called on an event-loop thread with `context` and the tasks posted to it
    /// (lk_mhd_post), oldest first; and once from lk_mhd_stop with any left over.
    void (*on_tasks)(void *context, void *const *tasks, size_t count);
} lk_mhd_config;

/// How much longer than a spin a thread holding suspended requests polls while answers are
/// awaited (lk_mhd_config.awaited): 20 spins, 1 ms at the default 50 us.
#define LK_AWAIT_SPIN_FACTOR 20

/// The longest lk_mhd_config.spin_microseconds.
#define LK_MHD_MAX_SPIN_MICROSECONDS 1000

/// With a list of request headers: the most bytes of the head libmicrohttpd is given (the
/// request line, with the target as "/", and the fields read), and how many fields.
#define LK_MHD_KEPT_HEAD_BYTES 1536
#define LK_MHD_KEPT_FIELDS 12

/// One response header.
typedef struct lk_mhd_header {
    const char *name;
    const char *value;
} lk_mhd_header;

/// Starts a daemon. Returns NULL and writes a reason into `error` when it cannot.
lk_mhd_server *lk_mhd_start(const lk_mhd_config *config, char *error, size_t error_size);

/// The port the daemon listens on.
uint16_t lk_mhd_port(const lk_mhd_server *server);

/// Stops accepting new connections; open ones are still served, and every answer from
/// now on carries Connection: close.
void lk_mhd_quiesce(lk_mhd_server *server);

/// Requests suspended and not yet completed (answered and sent, or failed).
unsigned int lk_mhd_suspended_count(const lk_mhd_server *server);

/// Connections held by event-loop thread `thread` (from 0), or 0 past the last.
unsigned int lk_mhd_thread_connections(const lk_mhd_server *server, unsigned int thread);

/// libmicrohttpd daemons event-loop thread `thread` has started, or 0 past the last.
unsigned int lk_mhd_thread_daemons(const lk_mhd_server *server, unsigned int thread);
/// How many of event-loop thread `thread`'s waits for events ended while it polled
/// (lk_mhd_config.spin_microseconds), without sleeping.
unsigned long long lk_mhd_thread_spin_hits(const lk_mhd_server *server, unsigned int thread);
/// How many times event-loop thread `thread` stopped polling because its CPU was contended
/// (lk_mhd_config.keep_polling_when_contended).
unsigned long long lk_mhd_thread_spin_pauses(const lk_mhd_server *server, unsigned int thread);
/// Requests suspended on a thread and not yet completed (sent, or their connection closed).
unsigned int lk_mhd_thread_suspended(const lk_mhd_server *server, unsigned int thread);

/// Stops the daemon and frees it.
/// - Precondition: every suspended request has been answered (lk_mhd_suspended_count is 0);
///   stopping with suspended connections is an API violation in libmicrohttpd.
void lk_mhd_stop(lk_mhd_server *server);

/// The server the request came to.
lk_mhd_server *lk_mhd_request_server(const lk_mhd_request *request);
/// The index of the event-loop thread that holds the request's connection, from 0.
unsigned int lk_mhd_request_thread(const lk_mhd_request *request);
/// Whether the calling thread is the server's event-loop thread `thread`.
int lk_mhd_on_thread(const lk_mhd_server *server, unsigned int thread);
/// Posts `task` to the event-loop thread `thread`, which hands it to `on_tasks` soon.
/// Returns 0, or -1 when out of memory (the task was not posted).
/// - Precondition: the server is running (not yet stopped).
int lk_mhd_post(lk_mhd_server *server, unsigned int thread, void *task);

/// The request method, e.g. "GET".
const char *lk_mhd_request_method(const lk_mhd_request *request);

/// The raw request target as sent (path and query, not percent-decoded); an absolute-form
/// target (http://host/path) is given in origin form (/path).
const char *lk_mhd_request_target(const lk_mhd_request *request);

/// The value of the first header named `name` (case-insensitive), or NULL.
const char *lk_mhd_request_header(const lk_mhd_request *request, const char *name);

/// How many request headers lk_mhd_request_headers visits.
size_t lk_mhd_request_header_count(const lk_mhd_request *request);

/// Calls `visit` for each request header in wire order.
void lk_mhd_request_headers(const lk_mhd_request *request,
                            void (*visit)(void *context, const char *name, const char *value),
                            void *context);

/// The request body (NULL when there is none) and its length.
const uint8_t *lk_mhd_request_body(const lk_mhd_request *request, size_t *length);

/// When the request guard refused the request (a framing fault, a limit passed, a
/// deadline missed), its HTTP status, with a stable code and a sentence for the client;
/// 0 otherwise. The method, target, headers and body are then not the client's and must
/// not be used. The answer carries Connection: close.
unsigned int lk_mhd_request_fault(const lk_mhd_request *request, const char **code, const char **message);

/// The client's address: writes its 4 (IPv4, an IPv4-mapped IPv6 address included) or 16
/// bytes into `bytes` and returns 4 or 16; 0 when unknown.
unsigned int lk_mhd_request_client_address(const lk_mhd_request *request, uint8_t bytes[16]);

/// Suspends the request so it can be answered later from any thread.
/// - Precondition: called from the handler, at most once.
/// - Warning: publish the request to other threads only after this returns; resuming
///   a connection that is not yet suspended is undefined in libmicrohttpd.
void lk_mhd_suspend(lk_mhd_request *request);

/// Answers the request: copies the headers and body. Returns 0 on success, -1 when out of
/// memory. A header whose name or value holds CR, LF or TAB is dropped. Header fields too
/// large for what is left of the connection's memory are answered instead with a 500
/// `answer_too_large` JSON error (libmicrohttpd would close the connection unanswered).
///
/// From the handler, the response is queued when the handler returns. After
/// lk_mhd_suspend, it may be called from any thread: it resumes the connection.
/// - Precondition: called exactly once per request.
int lk_mhd_respond(lk_mhd_request *request, unsigned int status,
                   const lk_mhd_header *headers, size_t header_count,
                   const void *body, size_t body_length);

/// Like lk_mhd_respond after lk_mhd_suspend, but leaves the connection suspended until
/// lk_mhd_resume: answering many requests first and resuming them back to back lets
/// libmicrohttpd resume them in few passes (each pass walks every suspended connection).
/// - Precondition: the request is suspended and not yet answered.
int lk_mhd_respond_deferred(lk_mhd_request *request, unsigned int status,
                            const lk_mhd_header *headers, size_t header_count,
                            const void *body, size_t body_length);

/// One response, headers and body, that many requests can be answered with: polls woken by
/// the same write that see the same bytes. Reference-counted; any thread.
typedef struct lk_mhd_shared lk_mhd_shared;
/// Copies the headers and body into a new shared response, holding one reference; NULL
/// when out of memory. A header whose name or value holds CR, LF or TAB is dropped.
lk_mhd_shared *lk_mhd_shared_create(unsigned int status, const lk_mhd_header *headers, size_t header_count,
                                    const void *body, size_t body_length);
/// Gives up one reference; the last frees it (requests answered with it hold their own).
void lk_mhd_shared_release(lk_mhd_shared *shared);
/// Like lk_mhd_respond, with a shared response (taking a reference for the request): from
/// the handler, a repeated answer costs no copy. Returns -1, answering nothing, when the
/// request's answer must close its connection (a framing fault, or the server draining),
/// or when its header fields do not fit the connection's memory: answer it with its own
/// response.
int lk_mhd_respond_shared(lk_mhd_request *request, lk_mhd_shared *shared);
/// Like lk_mhd_respond_deferred, with a shared response (taking a reference for the
/// request). Returns -1, answering nothing, when the request's answer must close its
/// connection (a framing fault, or the server draining): answer it with its own response.
/// - Precondition: the request is suspended and not yet answered.
int lk_mhd_respond_shared_deferred(lk_mhd_request *request, lk_mhd_shared *shared);
/// Resumes a request answered with lk_mhd_respond_deferred or lk_mhd_respond_shared_deferred.
void lk_mhd_resume(lk_mhd_request *request);
/// Called from a request's handler once it has answered and resumed requests on other
/// daemons of its event loop (the long-polls a write woke): runs those daemons now, so
/// their answers are sent before the handler builds its own. Does nothing outside a
/// handler on an event loop (a writer thread, a posted task), and inside a handler run by
/// this call; lk_mhd's dispatch does the same after every handler anyway.
void lk_mhd_send_woken(void);
/// Called by a thread that is no event loop (a writer) once it has resumed requests, or
/// posted work, for the loops: yields its CPU when it woke a loop that last ran on this
/// CPU, so that the loop sends those answers now rather than after the rest of this
/// thread's work. Does nothing otherwise, and on an event loop's thread.
void lk_mhd_yield_to_loops(void);

/// The calling thread's resume batch (Swift's `ResumeBatch.current`), NULL for none; and
/// setting it. A thread-local rather than a Swift task-local: pushing a task-local value
/// outside a task allocates, twice, and every write sets one.
void *lk_thread_resume_batch(void);
void lk_thread_set_resume_batch(void *batch);

/// An answer whose body is sent piece by piece for as long as the server has pieces: a
/// stream of server-sent events. Held without a thread: while it has nothing to send, its
/// connection is suspended, as a held request's is. Reference-counted; any thread.
typedef struct lk_mhd_stream lk_mhd_stream;
/// A stream for `request`, holding one reference for the caller. At most `limit` bytes may
/// wait to be sent. `closed(owner)` is called once, on the request's loop thread, when the
/// stream is over: its end sent, or its connection closed. NULL when out of memory.
/// - Precondition: called from the handler, then answered with lk_mhd_respond_stream.
lk_mhd_stream *lk_mhd_stream_create(lk_mhd_request *request, size_t limit, void (*closed)(void *owner),
                                    void *owner);
/// Answers the request, from the handler, with `stream`: the status and headers now
/// (chunked), then the body as it is sent. Returns -1 when out of memory or when the
/// header fields do not fit the connection's memory: answer it another way; `closed` is
/// then never called.
int lk_mhd_respond_stream(lk_mhd_request *request, unsigned int status, const lk_mhd_header *headers,
                          size_t header_count, lk_mhd_stream *stream);
/// Sends `bytes` (copied) after those sent before. Returns -1, sending nothing, when the
/// stream is over or ending, when out of memory, or when more than its limit would wait
/// to be sent (a client that does not read; a send when nothing waits is never refused
/// for its size).
int lk_mhd_stream_send(lk_mhd_stream *stream, const void *bytes, size_t length);
/// Sends `last` (may be empty), past the limit if need be, then ends the stream: the
/// response ends once what waits has been sent.
void lk_mhd_stream_end(lk_mhd_stream *stream, const void *last, size_t length);
/// Bytes sent to the stream and not yet handed to the connection.
size_t lk_mhd_stream_waiting(lk_mhd_stream *stream);
/// Gives up the caller's reference.
void lk_mhd_stream_release(lk_mhd_stream *stream);
/// Stages the C layer stamps for tracing (WakeTrace in Swift).
enum {
    LK_MHD_TRACE_RESUMED = 1,  // the answer was queued on the resumed connection
    LK_MHD_TRACE_SENT = 2,     // the answer's last byte was written
};

/// Turns tracing on: requests are stamped when read whole (lk_mhd_request_received_ns),
/// and `hook` is called, on the request's loop thread, for each stage of a request given a
/// tag. Call once, before starting any server.
void lk_mhd_set_trace(void (*hook)(uint64_t tag, unsigned int stage, uint64_t nanoseconds));

/// CLOCK_MONOTONIC nanoseconds when the request was read whole; 0 unless tracing.
uint64_t lk_mhd_request_received_ns(const lk_mhd_request *request);

/// Tags the request for the trace hook (0: untagged). Call before answering it.
void lk_mhd_request_set_trace_tag(lk_mhd_request *request, uint64_t tag);

#ifdef __cplusplus
}
#endif

#endif
