// What the request protocol (lk_mhd.c) and the event loops (lk_server.c) share.
#ifndef LK_SERVER_H
#define LK_SERVER_H

#include "lk_clients.h"
#include "lk_linger.h"
#include "lk_frame.h"
#include "lk_guard.h"
#include "lk_mhd.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>

// Most header fields, and query parameters in the target, a request may have.
#define LK_MAX_FIELDS 64
#define LK_MAX_PARAMETERS 128

typedef struct lk_thread lk_thread;

// How short a thread's last wait must have been, in spins
// (lk_mhd_config.spin_microseconds), for it to poll before it sleeps at all.
#define LK_SPIN_ARM_FACTOR 4
// A pass of polling that took longer than this, in microseconds, gave the CPU to another
// thread for a whole time slice: CPU-bound work shares the CPUs, and the thread then does
// not poll for LK_CONTENDED_PAUSE_US (lk_thread_wait).
#define LK_CONTENDED_PASS_US 500
#define LK_CONTENDED_PAUSE_US 100000

// Most daemons a thread runs, and a set of them, one bit each: a thread's loop visits only
// the daemons in its sets, never all of them, so that many daemons cost a pass nothing.
#define LK_MAX_DAEMONS_PER_THREAD 256
#define LK_LOOP_SET_WORDS (LK_MAX_DAEMONS_PER_THREAD / 64)

// One libmicrohttpd daemon: a shard of a thread's connections. A thread runs several, so
// that a resume, which makes libmicrohttpd 0.9.75 walk every suspended connection of its
// daemon, walks only the shard's.
typedef struct lk_loop {
    lk_mhd_server *server;
    lk_thread *thread;
    struct MHD_Daemon *daemon;
    unsigned int index;  // in its thread's loops, and its bit in the thread's sets
    int epoll_fd;        // the daemon's; in its thread's epoll set, never waited on itself
    // Set in a run that queued a resumed request's answer, which libmicrohttpd writes only
    // on its next run.
    int answer_queued;
    // When libmicrohttpd wants the daemon run again for its own timeouts (ms on
    // lk_server.c's clock); 0 for never.
    uint64_t due_ms;
    // Connections of this daemon in the middle of reading a request, with a deadline.
    lk_guard_conn *deadlines;
} lk_loop;

// A connection accepted by one thread for another (lk_server.c, lk_thread_accept).
struct lk_handoff;

// One event loop thread: it accepts connections, keeps each or hands it to a thread holding
// fewer (lk_server_pick), gives those it holds to its daemons, and runs them.
struct lk_thread {
    lk_mhd_server *server;
    pthread_t thread;
    int thread_started;
    int epoll_fd;   // the listening socket, the wake eventfd and each daemon's epoll descriptor
    int wake_fd;    // eventfd: a resume from another thread, a quiesce or a stop to look at
    // Set while a wake is written and not yet seen, so a burst of resumes writes once.
    atomic_int wake_pending;
    int listening;  // the listening socket is in epoll_fd
    int quiesced;
    uint64_t listen_again_ms;  // after running out of descriptors: when to try accepting again
    // Its connections (changed on this thread only; read by the others to pick one), and
    // those handed to it and not yet added.
    atomic_uint connections;
    atomic_uint incoming;
    _Atomic(struct lk_handoff *) handoffs;  // newest first
    unsigned int connection_limit;
    // The connection being handed to a daemon, counted against its client.
    int has_reservation;
    lk_client_key reservation;
    // Its daemons: loop_count started, room for loop_capacity (lk_thread_add starts more
    // as connections arrive), and the connections each holds.
    lk_loop *loops;
    unsigned int loop_count;
    unsigned int loop_capacity;
    unsigned int loop_connections[LK_MAX_DAEMONS_PER_THREAD];
    atomic_uint daemons_started;  // loop_count, for other threads to read
    // Daemons to run again without waiting (set on this thread: a resume here, or work
    // libmicrohttpd left pending), and those with a connection resumed by another thread.
    uint64_t run_again[LK_LOOP_SET_WORDS];
    _Atomic uint64_t resumed[LK_LOOP_SET_WORDS];
    // Daemons with request deadlines to sweep (lk_guard.c sets a bit; a sweep that leaves
    // none clears it).
    uint64_t guarded[LK_LOOP_SET_WORDS];
    // No later than the earliest of its daemons' due times; 0 for none. Reaching it makes
    // the loop look at every daemon's, the only pass that visits them all.
    uint64_t due_ms;
    int sending_woken;  // inside lk_loop_send_woken
    // Whether its next wait polls before it sleeps (lk_thread_wait): its last wait was short.
    int spin_armed;
    uint64_t spin_paused_until_us;  // no polling before then: the CPUs were contended
    atomic_ullong spin_pauses;      // times it set spin_paused_until_us
    atomic_ullong spin_hits;  // waits that polling ended, without sleeping
    atomic_int cpu;  // the CPU it ran on when its last wait returned (lk_mhd_yield_to_loops)
    // Its requests suspended and not yet completed (changed on this thread; atomic only
    // because a stopping server completes the last ones from another).
    atomic_uint suspended;
    // Work posted to run on this thread (lk_mhd_post), newest first.
    _Atomic(struct lk_task *) tasks;
    // Connections closed here while their clients may still be writing, drained first.
    lk_lingering lingering;
};

struct lk_mhd_server {
    lk_mhd_config config;
    char bind_address[64];
    uint16_t port;
    // Suspended requests not yet completed; read by the shutdown path on another thread.
    atomic_uint suspended;
    atomic_int stopping;
    atomic_int quiesce_requested;
    atomic_int draining;  // quiesced: answers close their connections
    // What a request may be (lk_frame.h), and the guard's derived sizes.
    lk_frame_limits limits;
    size_t stash_capacity;
    // What of a head libmicrohttpd is given (lk_head.h): the fields read, a copy of the
    // configured list or NULL for all; and how much of it, at most.
    char *kept_headers;
    size_t kept_head_max;
    size_t kept_fields_max;
    // libmicrohttpd's memory per connection (MHD_OPTION_CONNECTION_MEMORY_LIMIT).
    size_t connection_memory;
    uint64_t request_timeout_ms;
    int listen_fd;  // shared by every thread; closed by us, once
    pthread_mutex_t lock;
    pthread_cond_t thread_quiesced;
    unsigned int quiesced_threads;
    lk_clients clients;
    unsigned int thread_count;
    lk_thread threads[];
};

// What the streams (lk_stream.c) need of a request and give its response.
lk_loop *lk_mhd_request_loop(const lk_mhd_request *request);
struct MHD_Connection *lk_mhd_request_connection(const lk_mhd_request *request);
struct MHD_Response *lk_stream_response(lk_mhd_stream *stream);
void lk_stream_abandon(lk_mhd_stream *stream);

/// Makes the daemon run soon, after a resume of one of its connections from any thread.
void lk_loop_wake(lk_loop *loop);
/// Makes its thread sweep the daemon's request deadlines (on the daemon's thread).
void lk_loop_guard(lk_loop *loop);
/// Called on a daemon's thread with a request's answer ready and not yet queued: runs the
/// thread's other daemons that hold connections this request resumed (long-polls its write
/// woke), so their answers leave before this one. A woken poll's latency is then not
/// behind the write's own answer.
void lk_loop_send_woken(lk_loop *current);
/// The index of the loop's thread in its server.
unsigned int lk_loop_thread_index(const lk_loop *loop);

// libmicrohttpd's callbacks for requests, in lk_mhd.c; their closure is the lk_loop (daemon).
void *lk_on_uri(void *cls, const char *uri, struct MHD_Connection *connection);
void lk_on_completed(void *cls, struct MHD_Connection *connection, void **req_cls,
                     enum MHD_RequestTerminationCode code);
enum MHD_Result lk_on_access(void *cls, struct MHD_Connection *connection, const char *url,
                             const char *method, const char *version, const char *upload_data,
                             size_t *upload_data_size, void **req_cls);

#endif
