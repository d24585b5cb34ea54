// What the request protocol (lk_mhd.c) and the event loops (lk_server.c) share.
#ifndef LK_SERVER_H
#define LK_SERVER_H

#include "lk_clients.h"
#include "lk_frame.h"
#include "lk_guard.h"
#include "lk_mhd.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>

// Most header fields, and query parameters in the target, a request may have.
#define LK_MAX_FIELDS 100
#define LK_MAX_PARAMETERS 256

// One event loop: a thread, its daemon, and the eventfd that wakes it.
typedef struct lk_loop {
    lk_mhd_server *server;
    struct MHD_Daemon *daemon;
    int epoll_fd;  // the daemon's; polled for readiness, never waited on
    int wake_fd;   // eventfd: a resume, a quiesce or a stop to look at
    // Set while a wake is written and not yet seen, so a burst of resumes writes once.
    atomic_int wake_pending;
    pthread_t thread;
    int thread_started;
    int quiesced;
    int run_again;  // set on the loop's own thread: run the daemon again without waiting
    // A connection the accept policy counted against its client, not yet started.
    int has_reservation;
    lk_client_key reservation;
    // Connections of this loop in the middle of reading a request, with a deadline.
    lk_guard_conn *deadlines;
} lk_loop;

struct lk_mhd_server {
    lk_mhd_config config;
    char bind_address[64];
    // Suspended requests not yet completed; read by the shutdown path on another thread.
    atomic_uint suspended;
    atomic_int stopping;
    atomic_int quiesce_requested;
    atomic_int draining;  // quiesced: answers close their connections
    // What a request may be (lk_frame.h), and the guard's derived sizes.
    lk_frame_limits limits;
    size_t stash_capacity;
    uint64_t request_timeout_ms;
    int listen_fd;  // shared by every loop's daemon; closed by us, once
    pthread_mutex_t lock;
    pthread_cond_t loop_quiesced;
    unsigned int quiesced_loops;
    lk_clients clients;
    unsigned int loop_count;
    lk_loop loops[];
};

/// Makes the loop run its daemon soon (after a resume, or to see a quiesce or stop).
void lk_loop_wake(lk_loop *loop);

// libmicrohttpd's callbacks for requests, in lk_mhd.c; their closure is the lk_loop.
void *lk_on_uri(void *cls, const char *uri, struct MHD_Connection *connection);
void lk_on_completed(void *cls, struct MHD_Connection *connection, void **req_cls,
                     enum MHD_RequestTerminationCode code);
enum MHD_Result lk_on_access(void *cls, struct MHD_Connection *connection, const char *url,
                             const char *method, const char *version, const char *upload_data,
                             size_t *upload_data_size, void **req_cls);

#endif
